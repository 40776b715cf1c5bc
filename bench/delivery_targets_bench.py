"""Exactly-once delivery to an HL7 engine (MLLP) and to a FHIR server, with faults.

Per target: N done transcripts (synthetic patients) delivered by two `medasr deliver`
processes at once; retry rounds until nothing is left to retry; a second deliver that
must send 0; then K re-transcriptions delivered as replacements (MDM^T10 naming the
replaced TXA-12; FHIR relatesTo replaces the earlier resource). Faults: MLLP 5 % AE,
5 % no ACK, 2 % dropped connections (python-hl7's listener, which files each MSH-10
once); FHIR 8 % 429 and 4 % dropped answers (the devserver files, then drops). Prints
each ledger and one MDM^T02 as the listener received it. Not a speed benchmark.

    .venv/bin/python bench/delivery_targets_bench.py [--items 300] [--changed 40]
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from config.settings import StorageSettings
from devserver import RunningDevServer, start_devserver
from storage import open_store
from tests.service.mllp_listener import MllpListener, running_listener
from tests.tasks.delivery.delivery_helpers import make_done

MLLP_FAULTS = {"AE": 0.05, "none": 0.05, "drop": 0.02}
FHIR_FAULTS = {"rate_429": 0.08, "rate_reset": 0.04, "retry_after_s": 1}
MAX_ROUNDS = 5


def main() -> None:
    logging.getLogger("uvicorn.error").setLevel(logging.CRITICAL)  # the dropped answers, on purpose
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=300)
    parser.add_argument("--changed", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="medasr-targets-") as folder:
        bench_mllp(Path(folder) / "mllp", items=args.items, changed=args.changed)
        bench_fhir(Path(folder) / "fhir", items=args.items, changed=args.changed)


class Work:
    """One target's store and the environment of its `medasr deliver` processes."""

    def __init__(self, folder: Path, *, items: int, target: str) -> None:
        folder.mkdir(parents=True)
        self.folder = folder
        self.url = f"sqlite:///{folder / 'medasr.db'}"
        self.store = open_store(StorageSettings(database_url=self.url))
        self.texts = {
            f"/archive/{i:04d}.wav": f"Dictation {i}.\nFindings | normal ^ stable & clear ~ ok."
            for i in range(items)
        }
        self.meta = {u: {"patient_id": f"MRN-{i:04d}"} for i, u in enumerate(self.texts)}
        make_done(self.store, self.texts, metadata=self.meta)
        keep = {k: v for k, v in os.environ.items() if not k.startswith("MEDASR_")}
        self.env = keep | {
            "MEDASR_DATABASE_URL": self.url, "MEDASR_DATA_DIR": str(folder / "data"),
            "MEDASR_TOKEN": "bench", "MEDASR_FHIR_TOKEN": "bench", "MEDASR_CONCURRENCY": "8",
            "MEDASR_DELIVERY__TARGET": target, "MEDASR_DELIVERY__HL7_ACK_TIMEOUT_S": "0.5",
            "MEDASR_SERVICE__RETRY_INITIAL_BACKOFF_S": "0.01",
            "MEDASR_SERVICE__RETRY_MAX_BACKOFF_S": "0.05",
        }  # fmt: skip

    def deliver(self, processes: int = 1) -> list[int]:
        """Run `medasr deliver` in `processes` processes at once; their exit codes."""
        command = [sys.executable, "-m", "flows.cli", "deliver"]
        running = [
            subprocess.Popen(
                command,
                env=self.env,
                cwd=self.folder,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for _ in range(processes)
        ]
        return [p.wait() for p in running]

    def deliver_until_done(self, *, processes: int, wanted: int) -> tuple[list[int], int]:
        """`processes` deliverers at once, then one-process retry rounds until `wanted`
        rows are delivered (AE answers and in-doubt rows wait for a later run)."""
        codes = self.deliver(processes=processes)
        rounds = 0
        while self.counts().get("delivered", 0) < wanted and rounds < MAX_ROUNDS:
            rounds += 1
            self.deliver()
        return codes, rounds

    def counts(self) -> dict[str, int]:
        with self.store.unit_of_work(read_only=True) as uow:
            return {c.status: c.rows for c in uow.deliveries.delivery_counts()}

    def retranscribe(self, changed: int) -> None:
        amended = {u: t + "\nAddendum: reviewed." for u, t in list(self.texts.items())[:changed]}
        make_done(self.store, amended, version="v2", metadata=self.meta)


def bench_mllp(folder: Path, *, items: int, changed: int) -> None:
    """The MLLP ledger."""
    listener = MllpListener(rates=dict(MLLP_FAULTS), seed=11)
    with running_listener(listener):
        target = f"mllp://127.0.0.1:{listener.port}"
        work = Work(folder, items=items, target=target)
        started = time.monotonic()
        codes, rounds = work.deliver_until_done(processes=2, wanted=items)
        took_s = time.monotonic() - started
        first = _listener_figures(listener)
        second_codes = work.deliver()
        second_sent = len(listener.received) - first["messages"]
        work.retranscribe(changed)
        before = len(listener.received)
        third_codes, third_rounds = work.deliver_until_done(processes=1, wanted=items + changed)
        replacements = listener.received[before:]
    parents = {r.field("TXA", 12) for r in listener.received[:before]}
    t10 = {r.control_id: r for r in replacements if r.field("MSH", 9) == "MDM^T10^MDM_T02"}
    named = sum(r.field("TXA", 13) in parents for r in t10.values())
    third = (third_codes[0], third_rounds, _twice(listener))
    _print_ledger(target, [
        ("transcripts", items),
        ("first deliver: 2 processes, exit codes", codes),
        ("  then retry rounds (1 process each)", rounds),
        ("  wall time, s", round(took_s, 1)),
        ("  messages the engine received", first["messages"]),
        ("  answers AA / AE / no ACK / dropped", first["answers"]),
        ("  resends recognised (same MSH-10)", first["duplicates"]),
        ("  documents filed / filed twice", (first["filed"], first["twice"])),
        ("second deliver: exit code, messages sent", (second_codes[0], second_sent)),
        ("re-transcribed; MDM^T10 messages (distinct MSH-10)", (changed, len(t10))),
        ("  TXA-13 names an earlier TXA-12", named),
        ("  exit code, retry rounds; filed twice overall", third),
        ("deliveries by status", work.counts()),
    ])  # fmt: skip
    print("\none MDM^T02 as the listener received it (segments on lines):")
    first_t02 = next(r for r in listener.received if r.field("MSH", 9) == "MDM^T02^MDM_T02")
    print(str(first_t02.message).replace("\r", "\n"))


def _listener_figures(listener: MllpListener) -> dict[str, Any]:
    answers = Counter(r.answer for r in listener.received)
    return {
        "messages": len(listener.received),
        "answers": tuple(answers.get(a, 0) for a in ("AA", "AE", "none", "drop")),
        "filed": len(listener.documents_filed()),
        "twice": _twice(listener),
        "duplicates": listener.duplicates,
    }


def _twice(listener: MllpListener) -> int:
    return sum(1 for n in listener.documents_filed().values() if n > 1)


def bench_fhir(folder: Path, *, items: int, changed: int) -> None:
    """The FHIR ledger."""
    with start_devserver(port=0, token="bench", seed=7, **FHIR_FAULTS) as server:
        target = f"fhir+{server.url}/fhir"
        work = Work(folder, items=items, target=target)
        started = time.monotonic()
        codes, rounds = work.deliver_until_done(processes=2, wanted=items)
        took_s = time.monotonic() - started
        first = _creates(server)
        second_codes = work.deliver()
        second_sent = sum(_creates(server).values()) - sum(first.values())
        old_ids = set(server.state.fhir.resources)
        work.retranscribe(changed)
        third_codes, third_rounds = work.deliver_until_done(processes=1, wanted=items + changed)
        new = [r for k, r in server.state.fhir.resources.items() if k not in old_ids]
    replacing = sum(
        1
        for r in new
        for link in r.get("relatesTo", [])
        if link["code"] == "replaces" and link["target"]["reference"].split("/")[-1] in old_ids
    )
    per_identifier = Counter(server.state.fhir.count_by_identifier().values())
    _print_ledger(target, [
        ("transcripts", items),
        ("first deliver: 2 processes, exit codes", codes),
        ("  then retry rounds (1 process each)", rounds),
        ("  wall time, s", round(took_s, 1)),
        ("  creates sent: 201 / 200 found / 429 / dropped", _shown(first)),
        ("second deliver: exit code, creates sent", (second_codes[0], second_sent)),
        ("re-transcribed, created as replacements", (changed, len(new))),
        ("  relatesTo replaces the earlier resource", replacing),
        ("  exit code, retry rounds", (third_codes[0], third_rounds)),
        ("resources on the server", len(server.state.fhir.resources)),
        ("resources per identifier (count: identifiers)", dict(per_identifier)),
        ("deliveries by status", work.counts()),
    ])  # fmt: skip


def _creates(server: RunningDevServer) -> Counter[int]:
    return Counter(e.status for e in server.ledger.entries() if e.path.startswith("/fhir"))


def _shown(statuses: Counter[int]) -> tuple[int, ...]:
    return tuple(statuses.get(s, 0) for s in (201, 200, 429, 0))


def _print_ledger(target: str, rows: list[tuple[str, object]]) -> None:
    print(f"\n== {target}")
    for name, value in rows:
        print(f"  {name:<50} {value}")


if __name__ == "__main__":
    main()
