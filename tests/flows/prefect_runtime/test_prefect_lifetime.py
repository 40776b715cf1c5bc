"""Issue 20 §5-6: Prefect's temporary server lives and dies with the `medasr` that started it,
and a slow start on a busy host is waited for, not reported as a configuration error.

A busy host is stood in for by a `sitecustomize` that holds the temporary server's Python
process (only it: its command line names Prefect's app factory) for a while before it
imports anything; the server then starts as usual.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
import soundfile

from devserver import RunningDevServer, start_devserver
from devserver.tone import encode_tone_dictation
from tests.flows.prefect_server import MEDASR, SLOW_PREFECT_START, clean_env
from tests.helpers.processes import servers, servers_left, wait_for

TOKEN = "lifetime-token"
HOLD = """\
import os, sys, time
if "prefect.server.api.server:create_app" in sys.orig_argv:
    time.sleep(float(os.environ.get("HOLD_PREFECT_START_S", "0")))
"""


@pytest.fixture
def service() -> Iterator[RunningDevServer]:
    with start_devserver(token=TOKEN, port=0, engine="tone", latency_ms=4000) as server:
        yield server


@pytest.fixture
def source(tmp_path: Path) -> Path:
    root = tmp_path / "s"
    root.mkdir()
    soundfile.write(root / "a.wav", encode_tone_dictation("review in 6 weeks."), 16000)
    return root


def env_for(tmp_path: Path, server: RunningDevServer, *, hold_s: float, **extra: str) -> dict:
    hook = tmp_path / "hold"
    hook.mkdir(exist_ok=True)
    (hook / "sitecustomize.py").write_text(HOLD)
    env = clean_env(
        tmp_path / "prefect",
        MEDASR_BASE_URL=server.url,
        MEDASR_TOKEN=TOKEN,
        MEDASR_DATABASE_URL=f"sqlite:///{tmp_path / 'medasr.db'}",
        MEDASR_PIPELINE__SETTLE_S="0",
        PYTHONPATH=str(hook),
        HOLD_PREFECT_START_S=str(hold_s),
    )
    for name in SLOW_PREFECT_START:  # Prefect's own 20 s, as an operator has it
        env.pop(name, None)
    return env | extra


def start(source: Path, env: dict, cwd: Path) -> subprocess.Popen[bytes]:
    """`medasr run` in its own session, its output in files (a left server keeps no pipe)."""
    with (cwd / "out.log").open("wb") as out, (cwd / "err.log").open("wb") as err:
        return subprocess.Popen(
            [MEDASR, "run", str(source), "-l", "en-IN", "--quiet"],
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )


def stderr_of(cwd: Path) -> str:
    return (cwd / "err.log").read_text(errors="replace")


def stdout_of(cwd: Path) -> str:
    return (cwd / "out.log").read_text(errors="replace")


def item_statuses(database: Path) -> list[str]:
    """The status of every item in the run's SQLite store."""
    with closing(sqlite3.connect(database)) as db:
        return [status for (status,) in db.execute("SELECT status FROM items ORDER BY id")]


def test_sigkill_during_prefect_start_leaves_no_server(
    tmp_path: Path, service: RunningDevServer, source: Path
) -> None:
    env = env_for(tmp_path, service, hold_s=120)
    home = Path(env["PREFECT_HOME"])
    run = start(source, env, tmp_path)
    wait_for(lambda: servers(home), timeout_s=60, what="temporary server")
    run.kill()
    run.wait(timeout=30)
    assert servers_left(home) == []
    assert len(service.ledger) <= 1  # the head start may have sent the one file (issue 23 §4)


@pytest.mark.slow
def test_sigkill_or_a_second_ctrl_c_mid_run_leaves_no_server(
    tmp_path: Path, service: RunningDevServer, source: Path
) -> None:
    env = env_for(tmp_path, service, hold_s=0, MEDASR_PREFECT_START_TIMEOUT_S="180")
    home = Path(env["PREFECT_HOME"])
    run = start(source, env, tmp_path)
    wait_for(
        lambda: service.state.capacity.peak_in_flight or run.poll() is not None,
        timeout_s=180,
        what="request",
    )
    assert run.poll() is None, stderr_of(tmp_path)
    os.kill(run.pid, signal.SIGINT)
    time.sleep(0.3)  # the second Ctrl-C, 0.3 s after the first
    os.kill(run.pid, signal.SIGINT)
    assert run.wait(timeout=30) == 130, stderr_of(tmp_path)
    assert servers_left(home) == []


@pytest.mark.slow
def test_a_slow_prefect_start_is_waited_for_and_said(
    tmp_path: Path, service: RunningDevServer, source: Path
) -> None:
    # Held past Prefect's own 20 s: today "configuration error ... did not start in 20 s".
    env = env_for(tmp_path, service, hold_s=25)
    run = start(source, env, tmp_path)
    run.wait(timeout=300)
    err = stderr_of(tmp_path)
    assert run.returncode == 0, err
    waiting = [line for line in stdout_of(tmp_path).splitlines() if "waiting for Prefect" in line]
    assert len(waiting) == 1, stdout_of(tmp_path)
    assert "MEDASR_PREFECT_START_TIMEOUT_S" in waiting[0]
    assert [e.status for e in service.ledger.entries()] == [200]


def test_a_start_that_never_comes_is_reported_as_prefect_not_starting(
    tmp_path: Path, service: RunningDevServer, source: Path
) -> None:
    env = env_for(tmp_path, service, hold_s=300, MEDASR_PREFECT_START_TIMEOUT_S="7")
    run = start(source, env, tmp_path)
    run.wait(timeout=120)
    err = stderr_of(tmp_path)
    assert run.returncode == 75, err
    ours = [line for line in err.splitlines() if line.startswith("medasr:")]
    assert len(ours) == 1, err
    assert ours[0].startswith("medasr: Prefect did not start:"), ours
    assert "did not start in 7 s" in ours[0]
    assert "waiting for Prefect's temporary server" in stdout_of(tmp_path)  # said at 5 s
    assert "configuration error" not in err
    assert servers_left(Path(env["PREFECT_HOME"])) == []
    # Issue 23 §4: the head start sent the file while Prefect failed to start; its paid
    # answer is recorded (the next run does not buy it again), and the line says so.
    assert len(service.ledger) == 1
    assert ours[0].endswith("; 1 file was finished and recorded meanwhile, the others are pending")
    assert item_statuses(tmp_path / "medasr.db") == ["done"]


def test_a_reader_gone_while_prefect_starts_costs_no_file(tmp_path: Path, source: Path) -> None:
    # `medasr run SOURCE | head -1` on a busy host: the reader has left before Prefect
    # answers, so the "waiting for Prefect" notice (said at 5 s, the server is held 8 s)
    # meets a closed pipe while the head start's request (answered after 12 s) is in flight.
    with start_devserver(token=TOKEN, port=0, engine="tone", latency_ms=12_000) as service:
        env = env_for(tmp_path, service, hold_s=8)
        with (tmp_path / "err.log").open("wb") as err:
            run = subprocess.Popen(
                [MEDASR, "run", str(source), "-l", "en-IN"],
                env=env,
                cwd=tmp_path,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=err,
                start_new_session=True,
            )
        assert run.stdout is not None
        run.stdout.close()  # before medasr has written anything
        run.wait(timeout=300)

        assert "Traceback" not in stderr_of(tmp_path)
        assert item_statuses(tmp_path / "medasr.db") == ["done"]
        assert run.returncode == 0, stderr_of(tmp_path)
        assert [e.status for e in service.ledger.entries()] == [200]
        assert servers_left(Path(env["PREFECT_HOME"])) == []
