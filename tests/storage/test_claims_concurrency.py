"""Exactly-once claiming across processes, one of them killed (SIGKILL) while holding a lease."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from collections import Counter
from pathlib import Path

import pytest

from config.settings import StorageSettings
from storage import open_store
from storage.interface import UnitOfWorkFactory
from storage.sources import SourceFile
from tests.storage.claim_worker import LANG, WorkerPlan, run_worker

VICTIM_LEASE_S = 2.0
WORKER_LEASE_S = 60.0  # long, so a slow CI machine never lets a live worker's lease lapse


def wait_for_line(path: Path, prefix: str, *, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
        if any(line.startswith(prefix) for line in lines):
            return
        time.sleep(0.02)
    raise AssertionError(f"{path.name} never logged {prefix!r}")


def log_lines(path: Path) -> list[list[str]]:
    return [line.split() for line in path.read_text(encoding="utf-8").splitlines()]


def run_claimers(url: str, tmp_path: Path, *, items: int, workers: int, batch: int) -> None:
    store = open_store(StorageSettings(database_url=url), upgrade=True)
    with store.unit_of_work() as uow:
        files = [SourceFile(f"/archive/{i:05d}.wav", 100, "v1") for i in range(items)]
        uow.items.register_items(files, language=LANG)
    context = multiprocessing.get_context("spawn")
    logs = [tmp_path / f"worker-{n}.log" for n in range(workers)]
    plans = [
        WorkerPlan(url, f"worker-{n}", str(logs[n]), items, batch, WORKER_LEASE_S)
        for n in range(1, workers)
    ]
    victim_plan = WorkerPlan(url, "victim", str(logs[0]), items, batch, VICTIM_LEASE_S, 3)
    victim = context.Process(target=run_worker, args=(victim_plan,))
    victim.start()
    others = [context.Process(target=run_worker, args=(plan,)) for plan in plans]
    try:
        wait_for_line(logs[0], "claim ", timeout_s=60)
        for process in others:
            process.start()
        wait_for_line(logs[0], "hold", timeout_s=60)
        os.kill(victim.pid, signal.SIGKILL)
        victim.join(10)
        for process in others:
            process.join(120)
            assert process.exitcode == 0, f"a worker exited with {process.exitcode}"
    finally:
        for process in [victim, *others]:
            if process.is_alive():
                process.kill()
                process.join()
    check_exactly_once(store, logs, items)
    store.dispose()


def check_exactly_once(store: UnitOfWorkFactory, logs: list[Path], items: int) -> None:
    victim_lines = log_lines(logs[0])
    held = set()
    for fields in victim_lines:  # the claims after the last finish are the held batch
        if fields[0] == "claim":
            held.add(int(fields[1]))
        elif fields[0] == "done":
            held.discard(int(fields[1]))
    assert held, "the victim held nothing when it was killed"
    lines = [fields for log in logs for fields in log_lines(log)]
    claims = Counter(int(f[1]) for f in lines if f[0] == "claim")
    dones = Counter(int(f[1]) for f in lines if f[0] == "done")
    assert not [f for f in lines if f[0] == "lost"]
    assert set(dones) == set(range(1, items + 1)), "some item was never finished"
    assert max(dones.values()) == 1, "an item was finished twice"
    assert {i for i, n in claims.items() if n != 1} == held  # only the held ones twice
    assert all(claims[i] == 2 for i in held)
    with store.unit_of_work(read_only=True) as uow:
        assert uow.item_queries.pending_count(language=None) == 0
        reclaimed = [uow.item_queries.get_item(i) for i in held]
    assert all(r is not None and r.status == "done" and r.attempts == 2 for r in reclaimed)
    assert all(r is not None and r.text != "victim" for r in reclaimed)


@pytest.mark.postgres
def test_exactly_once_on_postgres_with_a_killed_worker(
    fresh_postgres_url: str, tmp_path: Path
) -> None:
    run_claimers(fresh_postgres_url, tmp_path, items=1000, workers=4, batch=5)


def test_exactly_once_on_sqlite_with_a_killed_worker(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'medasr.db'}"
    run_claimers(url, tmp_path, items=120, workers=3, batch=4)
