"""`medasr deliver` killed (SIGKILL) with uploads in flight, then run again (issue 20 §2).

A real devserver (slow answers), a real `medasr deliver` subprocess, a real SIGKILL. The
uploads in flight at the kill reached the receiver; their answers were never recorded.
They must become `in_doubt`, never be re-sent by the next plain `deliver` (a note filed
twice in the patient record), be counted in its exit code, and go out again only with
`--resend-in-doubt`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from config.settings import StorageSettings
from devserver import docs_route
from storage import open_store
from tests.tasks.delivery.delivery_helpers import docs_entries, make_done

DOCUMENTS = 12
CONCURRENCY = 4
LATENCY_MS = 1500

pytestmark = pytest.mark.slow


def _environment(tmp_path: Path, server, url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEDASR_")}
    env.update(
        {
            "MEDASR_DATABASE_URL": url,
            "MEDASR_BASE_URL": server.url,
            "MEDASR_TOKEN": server.token,
            "MEDASR_CONCURRENCY": str(CONCURRENCY),
            "MEDASR_REQUEST_TIMEOUT_S": "30",
            "MEDASR_DATA_DIR": str(tmp_path / "data"),
            "MEDASR_HOME": str(tmp_path / "home"),
        }
    )
    return env


def _deliver(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "flows.cli", "deliver", "--allow-unlinked", *args]
    return subprocess.run(
        command, env=env, cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def _wait_for(condition, *, limit_s: float = 60.0) -> None:
    deadline = time.monotonic() + limit_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("the condition was not reached in time")
        time.sleep(0.05)


def _count_arrivals(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per document upload that reached the (in-process) receiver, on arrival."""
    arrivals: list[int] = []
    check_in = docs_route.check_in

    async def counted(request, state, trace):  # type: ignore[no-untyped-def]
        arrivals.append(1)
        return await check_in(request, state, trace)

    monkeypatch.setattr(docs_route, "check_in", counted)
    return arrivals


def _delivered(url: str) -> int:
    store = open_store(StorageSettings(database_url=url))
    try:
        with store.unit_of_work(read_only=True) as uow:
            counts = {c.status: c.rows for c in uow.deliveries.delivery_counts()}
    finally:
        store.dispose()
    return counts.get("delivered", 0)


def test_uploads_in_flight_at_a_kill_are_in_doubt_not_sent_twice(
    tmp_path: Path, devserver_factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    arrivals = _count_arrivals(monkeypatch)
    server = devserver_factory(latency_ms=LATENCY_MS)
    url = f"sqlite:///{tmp_path / 'medasr.db'}"
    store = open_store(StorageSettings(database_url=url))
    make_done(store, {f"/archive/d{n:02d}.wav": f"note {n}" for n in range(DOCUMENTS)})
    store.dispose()
    env = _environment(tmp_path, server, url)
    repo_root = Path(__file__).resolve().parents[3]
    env["PYTHONPATH"] = str(repo_root)

    first = subprocess.Popen(
        [sys.executable, "-m", "flows.cli", "deliver", "--allow-unlinked"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        # The first batch answered and recorded, the second one received: kill with
        # uploads in flight (their answers are LATENCY_MS away).
        _wait_for(lambda: _delivered(url) >= CONCURRENCY)
        _wait_for(lambda: len(arrivals) >= 2 * CONCURRENCY)
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    _wait_for(lambda: len(docs_entries(server)) >= len(arrivals))  # it files what reached it
    filed_at_kill = len(docs_entries(server))
    assert filed_at_kill > CONCURRENCY  # uploads were in flight at the kill

    again = _deliver(env, tmp_path)
    uploads = len(docs_entries(server))
    print(f"\nuploads {uploads} for {DOCUMENTS} documents (exit {again.returncode}), "
          f"{filed_at_kill - CONCURRENCY} in doubt")  # fmt: skip
    assert uploads == DOCUMENTS  # nothing filed twice
    assert again.returncode == 1, again.stdout + again.stderr  # in doubt counts
    status = subprocess.run(
        [sys.executable, "-m", "flows.cli", "status"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    doubted = filed_at_kill - CONCURRENCY
    assert f"in_doubt\t{doubted}" in status.stdout, status.stdout
    dry = _deliver(env, tmp_path, "--dry-run")
    assert "in doubt" in dry.stdout, dry.stdout
    assert dry.returncode == 1

    resent = _deliver(env, tmp_path, "--resend-in-doubt")
    assert resent.returncode == 0, resent.stdout + resent.stderr
    assert len(docs_entries(server)) == DOCUMENTS + doubted  # a person chose to resend
    final = _deliver(env, tmp_path)
    assert final.returncode == 0
    assert len(docs_entries(server)) == DOCUMENTS + doubted
