"""Issue 40 §2: a busy host makes the night slower, never lost.

Every command that runs a flow starts Prefect's temporary server one way (prefect_api.py)
and waits for it while its process makes progress; it is judged stuck only when it uses
no CPU for a while or exits. A server slower than Prefect's own 20 s is stood in for by
the `sitecustomize` hold of test_prefect_lifetime.py; a busy host by busy-loop processes
that keep both cores busy, started and always killed by the test.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from devserver import RunningDevServer
from tests.flows.prefect_runtime.test_prefect_lifetime import (
    env_for,
    item_statuses,
    source,  # noqa: F401 - the fixture
    start,
    stderr_of,
    stdout_of,
)
from tests.flows.prefect_runtime.test_prefect_lifetime import service as lifetime_service
from tests.flows.prefect_server import MEDASR, REPO, free_port
from tests.helpers.processes import servers_left

service = lifetime_service  # the fixture, under the name the tests use
BUSY_LOOPS = 2  # the project's machine has two cores


@contextmanager
def cpu_load(loops: int = BUSY_LOOPS) -> Iterator[None]:
    """`loops` processes spinning on the CPU while the block runs; killed after."""
    spinning = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
        for _ in range(loops)
    ]
    try:
        yield
    finally:
        for process in spinning:
            process.kill()
            process.wait(timeout=30)


def load_average() -> float:
    return os.getloadavg()[0]


def demo(checkout: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MEDASR, "demo"],
        cwd=checkout,
        env=env | {"COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=900,
        stdin=subprocess.DEVNULL,
    )


def checkout_with_samples(tmp_path: Path) -> Path:
    checkout = tmp_path / "checkout"
    shutil.copytree(REPO / "samples", checkout / "samples")
    return checkout


@pytest.mark.slow
def test_demo_waits_for_a_server_slower_than_prefects_own_limit(
    tmp_path: Path, service: RunningDevServer
) -> None:
    # Held past Prefect's own 20 s, which `medasr demo` used to get (a traceback).
    env = env_for(tmp_path, service, hold_s=25)
    done = demo(checkout_with_samples(tmp_path), env)
    out = done.stdout + done.stderr
    assert "Traceback" not in out, out[-3000:]
    assert done.returncode == 0, out[-3000:]
    assert "requests the devserver saw" in done.stdout
    assert "waiting for Prefect's temporary server" in done.stdout
    assert servers_left(Path(env["PREFECT_HOME"])) == []


def test_a_server_that_makes_no_progress_is_exit_75_long_before_the_limit(
    tmp_path: Path,
    service: RunningDevServer,
    source: Path,  # noqa: F811
) -> None:
    # Held without using CPU (stuck), the last-resort wall clock left at its default.
    env = env_for(tmp_path, service, hold_s=600, MEDASR_PIPELINE__PREFECT_START_STALL_S="4")
    run = start(source, env, tmp_path)
    run.wait(timeout=120)
    err = stderr_of(tmp_path)
    assert run.returncode == 75, err
    ours = [line for line in err.splitlines() if line.startswith("medasr:")]
    assert len(ours) == 1, err
    assert "made no progress (used no CPU) for 4 s" in ours[0], ours
    assert "Traceback" not in err + stdout_of(tmp_path)
    assert servers_left(Path(env["PREFECT_HOME"])) == []


def test_demo_with_no_server_coming_is_one_line_and_exit_75(
    tmp_path: Path, service: RunningDevServer
) -> None:
    env = env_for(tmp_path, service, hold_s=600, MEDASR_PREFECT_START_TIMEOUT_S="6")
    done = demo(checkout_with_samples(tmp_path), env)
    assert done.returncode == 75, done.stderr[-3000:]
    ours = [line for line in done.stderr.splitlines() if line.startswith("medasr:")]
    assert len(ours) == 1, done.stderr
    assert ours[0].startswith("medasr: Prefect did not start:"), ours
    assert "Traceback" not in done.stdout + done.stderr
    assert servers_left(Path(env["PREFECT_HOME"])) == []


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_demo_run_and_web_beside_a_cpu_load(
    tmp_path: Path,
    service: RunningDevServer,
    source: Path,  # noqa: F811
) -> None:
    env = env_for(tmp_path, service, hold_s=0)  # Prefect's own 20 s, as an operator has it
    with cpu_load():
        began, load = time.monotonic(), load_average()
        done = demo(checkout_with_samples(tmp_path), env)
        print(f"demo beside the load: load {load:.1f}, {time.monotonic() - began:.0f} s")
        out = done.stdout + done.stderr
        assert done.returncode == 0, out[-3000:]
        assert "Traceback" not in out, out[-3000:]

        began, load = time.monotonic(), load_average()
        run = start(source, env, tmp_path)
        run.wait(timeout=900)
        print(f"run beside the load: load {load:.1f}, {time.monotonic() - began:.0f} s")
        assert run.returncode == 0, stderr_of(tmp_path)
        assert "Traceback" not in stderr_of(tmp_path)
        assert item_statuses(tmp_path / "medasr.db") == ["done"]

        _web_answers(tmp_path, env)
    assert servers_left(Path(env["PREFECT_HOME"])) == []


def _web_answers(tmp_path: Path, env: dict[str, str]) -> None:
    """`medasr web` on the run's store serves its sign-in page, then stops on SIGTERM."""
    port = free_port()
    with (tmp_path / "web.log").open("wb") as log:
        web = subprocess.Popen(
            [MEDASR, "web", "--port", str(port)],
            env=env,
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 300
        while True:
            assert web.poll() is None, (tmp_path / "web.log").read_text()
            try:
                answer = httpx.get(f"http://127.0.0.1:{port}/login", timeout=10)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, (tmp_path / "web.log").read_text()
                time.sleep(0.5)
        assert answer.status_code == 200
    finally:
        os.killpg(web.pid, signal.SIGTERM)
        web.wait(timeout=60)
    assert "Traceback" not in (tmp_path / "web.log").read_text()
