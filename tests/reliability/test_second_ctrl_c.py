"""Issue 20 §5: a paid answer that arrives between the first and the second Ctrl-C is
journaled before the process ends, and the next run records it instead of buying it again.

The store is kept busy by the test (an SQLite write lock held from the outside, as a long
report query or a stuck worker would), so the answer's store write is still being retried
when the second Ctrl-C comes.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from tests.reliability.corpus import age_files, write_tone_wav
from tests.reliability.evidence import items

TEXT = "paid for once. kept."


def wait_for(check, *, timeout_s: float, what: str):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if value := check():
            return value
        time.sleep(0.02)
    raise AssertionError(f"no {what} within {timeout_s} s")


@pytest.mark.slow  # two runs against a Prefect server: ~60 s
def test_an_answer_between_two_ctrl_c_is_journaled_and_not_bought_again(
    tmp_path: Path, tone_devserver, medasr_for, prefect_api: dict[str, str], figures
) -> None:
    server = tone_devserver(latency_ms=3000)
    source = tmp_path / "s"
    write_tone_wav(source / "a.wav", TEXT)
    age_files(source)
    database = tmp_path / "medasr.db"
    medasr = medasr_for(
        server,
        f"sqlite:///{database}",
        MEDASR_STORAGE__BUSY_TIMEOUT_MS="100",
        MEDASR_STORAGE__STORE_RETRY_S="300",
        **prefect_api,
    )
    run = medasr.start("run", str(source), "-l", "en-IN")
    wait_for(lambda: server.state.capacity.peak_in_flight, timeout_s=180, what="request")
    lock = sqlite3.connect(database, timeout=30, isolation_level=None)
    lock.execute("BEGIN IMMEDIATE")  # the store is busy from now on
    try:
        os.kill(run.process.pid, signal.SIGINT)
        wait_for(lambda: len(server.ledger), timeout_s=60, what="answer")  # paid
        time.sleep(1.0)  # the answer reaches medasr; its store write meets the lock
        os.kill(run.process.pid, signal.SIGINT)
        finished = run.wait(timeout_s=60)
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    assert finished.returncode == 130, finished.describe()
    journal = medasr.cwd / ".medasr" / "journal"
    kept = sorted(journal.glob("*.json")) if journal.is_dir() else []
    assert len(kept) == 1, finished.describe()

    # The short busy timeout was for the first run to meet the lock; the second run's own
    # writers (the journal's replay, the claims, the lease keeper) may wait longer on a busy
    # host, as any run's do by default.
    again = medasr.run("run", str(source), "-l", "en-IN", MEDASR_STORAGE__BUSY_TIMEOUT_MS="30000")

    assert again.returncode == 0, again.describe()
    assert [r["text"] for r in items(f"sqlite:///{database}")] == [TEXT]
    assert len(server.ledger) == 1  # recorded from the journal, not bought again
    figures("second-ctrl-c", journaled=len(kept), requests=len(server.ledger))
