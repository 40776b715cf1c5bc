"""Delivery's exactly-once figures, read from the devserver's ledger (not a speed benchmark).

Two `medasr deliver` processes start at once on one SQLite store of N done transcripts
against a devserver that throttles, fails and drops connections; then a second run;
then K recordings change (re-transcribed) and a third run. Printed: documents accepted,
accepted twice, what each later run sent, and the replaces links.

    .venv/bin/python bench/delivery_ledger.py [--items 300] [--changed 40]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from config.settings import StorageSettings
from devserver import start_devserver
from storage import open_store
from tests.tasks.delivery.delivery_helpers import make_done

DOCS = "/mr/api/v2/docs"
FAULTS = {"rate_429": 0.08, "rate_503": 0.08, "rate_reset": 0.04, "retry_after_s": 0}


def accepted(ledger: Path) -> Counter[str]:
    lines = [json.loads(line) for line in ledger.read_text().splitlines()]
    return Counter(e["sha256"] for e in lines if e["path"] == DOCS and e["status"] == 200)


def deliver(env: dict[str, str], processes: int = 1) -> list[int]:
    command = [sys.executable, "-m", "flows.cli", "deliver", "--allow-unlinked"]
    running = [
        subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL) for _ in range(processes)
    ]
    return [p.wait() for p in running]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=300)
    parser.add_argument("--changed", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="medasr-delivery-") as folder:
        measure(Path(folder), items=args.items, changed_count=args.changed)


def measure(work: Path, *, items: int, changed_count: int) -> None:
    """Run the three deliveries in `work` and print the ledger's figures."""
    ledger = work / "ledger.jsonl"
    url = f"sqlite:///{work / 'medasr.db'}"
    store = open_store(StorageSettings(database_url=url))
    texts = {f"/archive/{i:04d}.wav": f"dictation {i} text" for i in range(items)}
    make_done(store, texts)
    with start_devserver(port=0, token="bench", ledger_path=ledger, seed=7, **FAULTS) as server:
        env = {**os.environ, "MEDASR_DATABASE_URL": url, "MEDASR_BASE_URL": server.url,
               "MEDASR_TOKEN": "bench", "MEDASR_CONCURRENCY": "8",
               "MEDASR_SERVICE__RETRY_INITIAL_BACKOFF_S": "0.01",
               "MEDASR_SERVICE__RETRY_MAX_BACKOFF_S": "0.05"}  # fmt: skip
        codes_1 = deliver(env, processes=2)
        after_1 = accepted(ledger)
        codes_2 = deliver(env)
        after_2 = accepted(ledger)
        changed = {uri: text + " amended" for uri, text in list(texts.items())[:changed_count]}
        make_done(store, changed, version="v2")
        codes_3 = deliver(env)
        after_3 = accepted(ledger)
        requests = sum(1 for line in ledger.read_text().splitlines() if DOCS in line)
    with store.unit_of_work(read_only=True) as uow:
        counts = {c.status: c.rows for c in uow.deliveries.delivery_counts()}
    replaces = sum(
        1 for row in _rows(url) if row["replaces_id"] is not None and row["status"] == "delivered"
    )
    store.dispose()
    print(f"items {items}, two deliver processes at once, faults {FAULTS}")
    print(
        f"run 1 exit codes {codes_1}: accepted {sum(after_1.values())} documents, "
        f"distinct {len(after_1)}, accepted twice {sum(1 for n in after_1.values() if n > 1)}"
    )
    print(f"run 2 exit codes {codes_2}: accepted {sum(after_2.values()) - sum(after_1.values())}")
    print(
        f"{changed_count} re-transcribed; run 3 exit codes {codes_3}: accepted "
        f"{sum(after_3.values()) - sum(after_2.values())}, rows with replaces {replaces}"
    )
    print(f"docs requests in all {requests} (retries and faults included); rows {counts}")


def _rows(url: str) -> list[dict[str, object]]:
    from tests.reliability.evidence import query

    return query(url, "SELECT status, replaces_id FROM deliveries")


if __name__ == "__main__":
    main()
