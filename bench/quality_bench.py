"""Quality figures at scale (not a test: prints figures beside targets).

1. `medasr quality --by department` over 10^5 reviewed notes: the whole command (a
   child process, Python start-up included) and its reading in this process; <= 1 s.
2. The workstation's Quality page over the same store: server time; <= 1 s.
3. A 60-minute dictation's accuracy at finalize (9,000 words, 3 % of them changed):
   the alignment alone, and the whole decision in a store (revision, sign-off,
   figures); <= 100 ms.

Each of the first two is printed beside a reference measured in the same run, so the
ratio holds on a busy host: for the command, a child Python that imports only sqlite3
and asks the same sums by department (start-up plus the one query, the least any tool
giving these figures does); for the page, the same process asking sqlite3 for its
monthly sums and the newest 2,000 corrected notes' texts (the page's data, unprocessed).

The store is filled in bulk (the bench measures reading, not writing): 10^5 done
items with author and department, their figures over twelve months, and the newest
2,000 with a machine and a final text of 300 words (the page's corrections) and
the figures of those texts.

    .venv/bin/python bench/quality_bench.py [--notes 100000]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import insert

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from web_bench import PASSWORD, ServerClock, served  # noqa: E402

from config.settings import StorageSettings  # noqa: E402
from config.workstation import WebSettings  # noqa: E402
from storage import open_review_store  # noqa: E402
from storage.accuracy_records import AccuracyFilter  # noqa: E402
from storage.models import Item, NoteAccuracyRow  # noqa: E402
from storage.sources import SourceFile  # noqa: E402
from tasks.review.accounts import add_reviewer  # noqa: E402
from tasks.review.decisions import finalize  # noqa: E402
from tasks.review.quality_reading import QualityQuestion, read_quality  # noqa: E402
from tasks.review.word_accuracy import measure_words  # noqa: E402
from web.app import build_app  # noqa: E402

TARGET_S = 1.0
FINALIZE_TARGET_MS = 100.0
WORDS = [
    "patient",
    "takes",
    "metformin",
    "twice",
    "daily",
    "blood",
    "pressure",
    "stable",
    "review",
    "in",
    "six",
    "weeks",
]


def fill(engine: Any, *, notes: int, corrected: int) -> None:
    """`notes` done items and their figures; the newest `corrected` keep both texts."""
    rng = random.Random(44)
    start = datetime(2025, 12, 1, tzinfo=UTC)
    items, figures = [], []
    for n in range(notes):
        at = start + timedelta(seconds=n * 365 * 86_400 // notes)
        department, author = f"dept-{n % 12:02d}", f"dr-{n % 200:03d}"
        with_text = n >= notes - corrected
        final = " ".join(rng.choice(WORDS) for _ in range(300)) if with_text else None
        items.append({
            "id": n + 1, "source_uri": f"/archive/{n:07d}.wav", "language": "en-IN",
            "source_version": "v1", "size_bytes": 10, "status": "done", "retryable": False,
            "attempts": 1, "created_at": at, "updated_at": at, "done_at": at,
            "text": final, "machine_text": final and final.replace("metformin", "met for men"),
            "metadata": {"author": author, "department": department},
        })  # fmt: skip
        words, errors = 300, rng.choice((0, 0, 1, 2, 3, 5, 8, 13))
        # A kept pair's figures are its texts' own: each "met for men" is a substitution
        # and two insertions (a note whose figures said no change would give no pair).
        changed = final.split().count("metformin") if final else 0
        substitutions, insertions = (changed, 2 * changed) if final else (errors, 0)
        figures.append({
            "item_id": n + 1, "revision": 1, "reviewer": f"rev-{n % 7}", "reviewed_at": at,
            "language": "en-IN", "author": author, "department": department, "words": words,
            "substitutions": substitutions, "deletions": 0, "insertions": insertions,
            "accuracy": max(0.0, 1 - (substitutions + insertions) / words),
        })  # fmt: skip
    with engine.begin() as connection:
        for offset in range(0, notes, 5000):
            connection.execute(insert(Item.__table__), items[offset : offset + 5000])
            connection.execute(insert(NoteAccuracyRow.__table__), figures[offset : offset + 5000])


def command_times(database_url: str, *, times: int) -> list[float]:
    env = {**os.environ, "MEDASR_DATABASE_URL": database_url}
    found = []
    for _ in range(times):
        begin = time.perf_counter()
        subprocess.run(
            [str(ROOT / ".venv/bin/medasr"), "quality", "--by", "department"],
            env=env, check=True, capture_output=True,
        )  # fmt: skip
        found.append(time.perf_counter() - begin)
    return found


_SUMS = (
    "count(*), sum(words), sum(substitutions), sum(deletions), sum(insertions), "
    "sum(substitutions + deletions + insertions > 0), "
    "sum((substitutions + deletions + insertions) * (substitutions + deletions + insertions)), "
    "sum((substitutions + deletions + insertions) * words), sum(words * words)"
)
REFERENCE_COMMAND = (
    "import sqlite3, sys; con = sqlite3.connect(sys.argv[1]); "
    f"print(con.execute('SELECT department, {_SUMS} FROM note_accuracy "
    "GROUP BY department').fetchall())"
)


def reference_command_times(path: Path, *, times: int) -> list[float]:
    found = []
    for _ in range(times):
        begin = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", REFERENCE_COMMAND, str(path)], check=True, capture_output=True
        )
        found.append(time.perf_counter() - begin)
    return found


def reference_page_times(path: Path, *, times: int) -> list[float]:
    import sqlite3

    found = []
    for _ in range(times):
        begin = time.perf_counter()
        con = sqlite3.connect(path)
        con.execute(
            f"SELECT department, substr(reviewed_at, 1, 7) AS m, {_SUMS} FROM note_accuracy "
            "GROUP BY department, m"
        ).fetchall()
        con.execute(
            "SELECT items.machine_text, items.text FROM note_accuracy JOIN items "
            "ON items.id = note_accuracy.item_id WHERE items.text IS NOT NULL "
            "ORDER BY note_accuracy.reviewed_at DESC LIMIT 2000"
        ).fetchall()
        con.close()
        found.append(time.perf_counter() - begin)
    return found


def reading_times(store: Any, *, times: int) -> list[float]:
    found = []
    for _ in range(times):
        begin = time.perf_counter()
        groups = read_quality(store, QualityQuestion(by="department", selection=AccuracyFilter()))
        found.append(time.perf_counter() - begin)
    assert len(groups) == 12
    return found


def page_times(store: Any, *, times: int) -> list[float]:
    import httpx  # the client of the bench's own server

    clock = ServerClock(build_app(store, web=WebSettings(), tls=False))
    with served(clock) as url, httpx.Client(base_url=url, timeout=120) as client:
        token = client.get("/login").text.split('name="csrf_token" value="')[1].split('"')[0]
        client.post("/login", data={"name": "bench", "password": PASSWORD, "csrf_token": token})
        clock.times_ms.clear()
        for _ in range(times):
            assert client.get("/quality?by=department").status_code == 200
    return [ms / 1000 for ms in clock.times_ms]


def dictation_pair(rng: random.Random) -> tuple[str, str]:
    """A 60-minute dictation (150 words a minute) and the machine's text, 3 % changed."""
    final = [rng.choice(WORDS) for _ in range(9000)]
    machine = [("met for men" if rng.random() < 0.03 else word) for word in final]
    return " ".join(machine), " ".join(final)


def finalize_times(folder: Path, *, times: int) -> tuple[list[float], list[float]]:
    rng = random.Random(60)
    machine, final = dictation_pair(rng)
    alignment = []
    for _ in range(20):
        begin = time.perf_counter()
        measure_words(machine, final, language="en-IN")
        alignment.append(time.perf_counter() - begin)
    store = open_review_store(StorageSettings(database_url=f"sqlite:///{folder / 'f.db'}"))
    decisions = []
    for n in range(times):
        uri = f"/hour/{n}.wav"
        with store.unit_of_work() as uow:
            uow.items.register_items([SourceFile(uri, 10, "v1")], language="en-IN")
            [claimed] = uow.claims.claim_batch(owner="b", language="en-IN", limit=1, lease_s=60)
            uow.claims.finish_item(
                claimed.id, lease_token=claimed.lease_token, text=machine, duration_ms=3_600_000,
                chunk_count=1, extras={}, flags=["repetition"],
            )  # fmt: skip
        begin = time.perf_counter()
        with store.unit_of_work() as uow:
            finalize(uow, item_id=claimed.id, text=final, author="bench", base_revision=0)
        decisions.append(time.perf_counter() - begin)
    store.dispose()
    return alignment, decisions


def row(
    name: str, seconds: list[float], *, target_s: float, reference: list[float] | None = None
) -> None:
    median = statistics.median(seconds)
    against = "-"
    if reference:
        base = statistics.median(reference)
        against = f"{base * 1000:.0f} ms: {median / base:.2f}"
    print(
        f"| {name} | {median * 1000:.0f} ms | {max(seconds) * 1000:.0f} ms | {against} | "
        f"<= {target_s * 1000:.0f} ms | {median / target_s:.2f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=100_000)
    notes = parser.parse_args().notes
    with tempfile.TemporaryDirectory(prefix="medasr-quality-bench-") as tmp:
        folder = Path(tmp)
        url = f"sqlite:///{folder / 'q.db'}"
        store = open_review_store(StorageSettings(database_url=url))
        with store.unit_of_work() as uow:
            add_reviewer(uow, name="bench", role="reviewer", password=PASSWORD)
        fill(store.engine, notes=notes, corrected=2000)  # type: ignore[attr-defined]
        print("| what | median | slowest | reference: median / reference | target "
              "| median / target |")  # fmt: skip
        print("|---|---|---|---|---|---|")
        row(f"`medasr quality --by department`, {notes:,} notes (whole command)",
            command_times(url, times=3), target_s=TARGET_S,
            reference=reference_command_times(folder / "q.db", times=3))  # fmt: skip
        row(f"its reading and grouping in process, {notes:,} notes",
            reading_times(store, times=5), target_s=TARGET_S)  # fmt: skip
        row(f"Quality page `/quality`, {notes:,} notes (server time)",
            page_times(store, times=5), target_s=TARGET_S,
            reference=reference_page_times(folder / "q.db", times=5))  # fmt: skip
        store.dispose()
        alignment, decisions = finalize_times(folder, times=5)
        target = FINALIZE_TARGET_MS / 1000
        row("accuracy of a 60-minute dictation (9,000 words): alignment", alignment,
            target_s=target)  # fmt: skip
        row("finalize of that dictation in the store (revision, sign-off, figures)", decisions,
            target_s=target)  # fmt: skip


if __name__ == "__main__":
    main()
