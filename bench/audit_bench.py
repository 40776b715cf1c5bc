"""The audit trail's costs and the purge at scale, on SQLite files in a temporary folder.

1. cost: `medasr deliver` of N transcripts to the devserver with audit events (one per
   delivery, in the transaction that records it) and with `record_event` made a no-op,
   alternating, best of R each; a `medasr run` writes no event per file, so its share is
   the rerun's one event per command.
2. verify: `medasr audit verify` over E events appended through the real writer.
3. purge: P/10, P/2 and P done recordings (1 KB of text and one chunk each, written by
   raw SQL here) purged by `medasr purge --older-than 90d` in a child process, as a user
   runs it: the child's wall time, CPU (user + system, wait4), its peak RSS (VmHWM) and
   its RSS over time, both from /proc. The seeding process's memory says nothing about the purge.

    .venv/bin/python bench/audit_bench.py [--deliveries 500] [--events 100000]
                                          [--recordings 20000] [--rounds 3]
                                          [--only cost|verify|purge]
Targets (full scale): cost <= 2 % of a run; verify 10^6 events <= 30 s; purge 10^5
recordings <= 60 s with flat memory.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tasks.delivery.audit_trail as delivery_trail
from audit import AuditAction, record_event
from audit.verify import verify_trail
from config.settings import DeliverySettings, PipelineSettings, Settings, StorageSettings
from devserver import start_devserver
from storage import open_store
from tasks.delivery.deliverer import deliver_pending
from tests.servers import client_settings
from tests.tasks.delivery.delivery_helpers import make_done

ROOT = Path(__file__).resolve().parents[1]


def bench_cost(folder: Path, *, deliveries: int, rounds: int) -> dict[str, float]:
    """CPU seconds (this process: medasr and the in-process devserver) per deliver of
    `deliveries` documents, with events and without; the best of `rounds` each. CPU, not
    wall: on a shared machine the wall time moves more than the difference."""
    best: dict[str, float] = {"with events": float("inf"), "without": float("inf")}
    real = delivery_trail.record_event
    with start_devserver(token="bench-token", port=0) as server:
        service, encryption = client_settings(server, token="bench-token")
        for number in range(rounds * 2):
            label = "with events" if number % 2 == 0 else "without"
            url = f"sqlite:///{folder / f'cost-{number}.db'}"
            store = open_store(StorageSettings(database_url=url))
            make_done(store, {f"/a/{i:05d}.wav": f"note {i}" for i in range(deliveries)})
            settings = Settings(
                service=service, encryption=encryption,
                storage=StorageSettings(database_url=url, data_dir=folder / "data"),
                pipeline=PipelineSettings(concurrency=8), delivery=DeliverySettings(),
            )  # fmt: skip
            delivery_trail.record_event = real if label == "with events" else _no_event  # type: ignore[assignment]
            started = time.process_time()
            asyncio.run(
                deliver_pending(
                    settings=settings,
                    store=store,
                    language=None,
                    format_name="txt",
                    allow_unlinked=True,  # bench recordings have no manifest
                )
            )
            best[label] = min(best[label], time.process_time() - started)
            store.dispose()
    delivery_trail.record_event = real  # type: ignore[assignment]
    return best


def _no_event(*_args: object, **_kwargs: object) -> None:
    """record_event that writes nothing (the baseline)."""


def bench_verify(folder: Path, *, events: int) -> tuple[float, float]:
    """(CPU seconds to append `events` through the writer, CPU seconds to verify them)."""
    store = open_store(StorageSettings(database_url=f"sqlite:///{folder / 'verify.db'}"))
    started = time.process_time()
    for start in range(0, events, 1_000):
        with store.unit_of_work() as uow:
            for index in range(start, min(start + 1_000, events)):
                record_event(
                    uow, action=AuditAction.DELIVERED, actor="os:bench@host", item_id=index,
                    path=f"ward/{index:07d}.wav", target="docs",
                    detail={"receiver_id": f"doc-{index}", "format": "txt"},
                )  # fmt: skip
    appended = time.process_time() - started
    wall = time.perf_counter()
    started = time.process_time()
    verdict = verify_trail(store)
    verified = time.process_time() - started
    print(f"verify wall {time.perf_counter() - wall:.1f} s (CPU below)")
    assert verdict.whole
    assert verdict.report.events == events
    store.dispose()
    return appended, verified


def seed_recordings(url: str, *, recordings: int) -> None:
    """`recordings` done items finished 200 days ago, 1 KB of text and one chunk each."""
    from sqlalchemy import create_engine, text

    from storage.database import normalize_database_url

    engine = create_engine(normalize_database_url(url))
    old = (datetime.now(UTC) - timedelta(days=200)).replace(tzinfo=None)
    body = "patient note " * 80
    with engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO items (source_uri, language, source_version, sha256, size_bytes,"
                " status, retryable, attempts, text, metadata, created_at, updated_at, done_at)"
                " VALUES (:u, 'en-IN', 'v1', :s, 1000, 'done', 0, 1, :t, :m, :d, :d, :d)"
            ),
            [{"u": f"/a/{i:07d}.wav", "s": f"{i:064x}", "t": f"{i} {body}",
              "m": json.dumps({"patient": f"P{i}"}), "d": old} for i in range(recordings)],
        )  # fmt: skip
        connection.execute(
            text(
                'INSERT INTO chunks (item_id, "index", start_ms, end_ms, size_bytes, status,'
                " text, attempts, updated_at) SELECT id, 0, 0, 1000, 10, 'done', text, 1, :d"
                " FROM items"
            ),
            {"d": old},
        )
    engine.dispose()


def bench_purge(folder: Path, *, recordings: int) -> PurgeFigures:
    """`medasr purge --older-than 90d` as a user runs it: a child process on a database of
    `recordings` old done recordings; its own wall time and CPU (wait4), its peak RSS."""
    url = f"sqlite:///{folder / f'purge-{recordings}.db'}"
    open_store(StorageSettings(database_url=url)).dispose()  # the schema, migrated
    seed_recordings(url, recordings=recordings)
    env = {
        **os.environ,
        "MEDASR_DATABASE_URL": url,
        "MEDASR_DATA_DIR": str(folder / "data"),
        "PREFECT_API_URL": "",  # no server: the purge says so and deletes no flow run
        "PREFECT_HOME": str(folder / "prefect"),
    }
    command = [sys.executable, "-m", "flows.cli", "purge", "--older-than", "90d"]
    started = time.perf_counter()
    child = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    peak, samples = _memory_samples(child.pid)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    output = child.stdout.read() if child.stdout else ""
    if child.returncode != 0 or f"purged {recordings} recording(s)" not in output:
        raise SystemExit(f"medasr purge failed ({child.returncode}):\n{output}")
    return PurgeFigures(
        wall_s=wall,
        cpu_s=usage.ru_utime + usage.ru_stime,
        peak_rss_mb=peak,
        rss_mb=samples,
    )


@dataclass(frozen=True)
class PurgeFigures:
    """One purge child's figures: wall and CPU seconds, peak RSS, and its RSS over time."""

    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    rss_mb: list[float]

    def line(self, recordings: int) -> str:
        quarters = [self.rss_mb[len(self.rss_mb) * q // 4] for q in range(4)] + self.rss_mb[-1:]
        curve = " ".join(f"{mb:.0f}" for mb in quarters)
        return (
            f"medasr purge {recordings} recordings: {self.wall_s:.1f} s wall, "
            f"{self.cpu_s:.1f} s CPU ({self.cpu_s / recordings * 1e3:.2f} ms each), "
            f"peak RSS {self.peak_rss_mb:.0f} MB (RSS at 0, 1/4, 1/2, 3/4, end: {curve} MB)"
        )


def _memory_samples(pid: int, *, every_s: float = 0.2) -> tuple[float, list[float]]:
    """(the child's peak RSS, its RSS every `every_s`) in MB, read from /proc until it
    exits. VmHWM, not wait4's ru_maxrss: Linux carries the high-water mark of the image
    before exec into ru_maxrss, and before exec the child was this (larger) process."""
    peak, samples = 0.0, []
    status = Path(f"/proc/{pid}/status")
    while True:
        try:
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines())
        except (FileNotFoundError, ProcessLookupError):
            break
        if "VmRSS" not in fields:  # a zombie: it has exited, wait4 collects it
            break
        peak = int(fields["VmHWM"].split()[0]) / 1024
        rss = int(fields["VmRSS"].split()[0]) / 1024
        if rss:  # 0 until the child has exec-ed
            samples.append(rss)
        time.sleep(every_s)
    return peak, samples or [0.0]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--deliveries", type=int, default=500)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--recordings", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--only", choices=("cost", "verify", "purge"), help="Run one part (default: all)."
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="medasr-audit-bench-") as name:
        folder = Path(name)
        if args.only in (None, "cost"):
            report_cost(folder, deliveries=args.deliveries, rounds=args.rounds)
        if args.only in (None, "verify"):
            report_verify(folder, events=args.events)
        if args.only in (None, "purge"):
            for recordings in (args.recordings // 10, args.recordings // 2, args.recordings):
                print(bench_purge(folder, recordings=recordings).line(recordings), flush=True)


def report_cost(folder: Path, *, deliveries: int, rounds: int) -> None:
    cost = bench_cost(folder, deliveries=deliveries, rounds=rounds)
    share = (cost["with events"] - cost["without"]) / cost["without"] * 100
    print(f"deliver {deliveries}: CPU with events {cost['with events']:.2f} s, "
          f"without {cost['without']:.2f} s, audit share {share:+.1f} %", flush=True)  # fmt: skip


def report_verify(folder: Path, *, events: int) -> None:
    appended, verified = bench_verify(folder, events=events)
    print(f"{events} events: CPU appended in {appended:.1f} s "
          f"({appended / events * 1e6:.0f} us each), verified in {verified:.1f} s "
          f"({verified / events * 1e6:.1f} us each)", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
