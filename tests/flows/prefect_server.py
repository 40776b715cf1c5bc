"""A real Prefect server (`prefect server start`) on loopback, and background processes for tests.

Every process runs in its own session (process group) so teardown ends it and its
children (flow-run subprocesses, uvicorn) by group id, never by name.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import httpx
from prefect.client.orchestration import PrefectClient

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
PREFECT = str(VENV_BIN / "prefect")
MEDASR = str(VENV_BIN / "medasr")

T = TypeVar("T")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# Prefect's temporary server starts in 7-14 s on an idle 2-core machine and gives up after
# 20 s by default; these tests judge medasr, not how fast Prefect starts on a busy host.
# medasr waits MEDASR_PREFECT_START_TIMEOUT_S (its own, issue 20); Prefect's for Prefect.
SLOW_PREFECT_START = {
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
    "MEDASR_PREFECT_START_TIMEOUT_S": "180",
}


def stripped_env() -> dict[str, str]:
    """This environment without PREFECT_*/MEDASR_* variables, with the slow-start allowance."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "MEDASR_"))}
    return kept | SLOW_PREFECT_START


def clean_env(prefect_home: Path, **extra: str) -> dict[str, str]:
    """`stripped_env()` plus a private PREFECT_HOME (created), no analytics, no UI."""
    prefect_home.mkdir(parents=True, exist_ok=True)
    return stripped_env() | {
        "PREFECT_HOME": str(prefect_home),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_SERVER_UI_ENABLED": "false",
        "PYTHONUNBUFFERED": "1",
        "COLUMNS": "200",
        **extra,
    }


def migrate_prefect_home(home: Path, *, timeout_s: float = 600.0) -> None:
    """Create Prefect's database under `home` once, so that later starts skip the migrations."""
    home.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [PREFECT, "server", "database", "upgrade", "-y"],
        env=stripped_env() | {"PREFECT_HOME": str(home)},
        check=True,
        capture_output=True,
        timeout=timeout_s,
    )


@dataclass
class Background:
    """A process started by a test, its log file, and how to end it."""

    process: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        """The last 4,000 characters of its output."""
        return self.log_path.read_text(errors="replace")[-4000:]

    def stop(self, *, timeout_s: float = 20.0) -> None:
        """SIGTERM the process group, then SIGKILL whatever is left of it."""
        if self.process.poll() is None:
            _signal_group(self.process.pid, signal.SIGTERM)
            with suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=timeout_s)
        _signal_group(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=timeout_s)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with suppress(ProcessLookupError):
        os.killpg(pgid, sig)


def start_background(
    args: list[str], *, env: dict[str, str], cwd: Path, log_path: Path
) -> Background:
    """Start `args` in a new process group, output to `log_path`."""
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            args,
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return Background(process=process, log_path=log_path)


class Watched(Protocol):
    """A started process a wait gives up on when it dies: its Popen and its output so far."""

    @property
    def process(self) -> subprocess.Popen[bytes]: ...

    def log(self) -> str: ...


def wait_until(
    check: Callable[[], T | None],
    *,
    timeout_s: float,
    what: str,
    alive: Sequence[Watched] = (),
    interval_s: float = 0.25,
) -> T:
    """Poll `check` until it returns a value; fail early if a background process died."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value is not None:
            return value
        for process in alive:
            if process.process.poll() is not None:
                raise AssertionError(
                    f"{what}: {process.process.args[:3]} exited with "
                    f"{process.process.returncode}:\n{process.log()}"
                )
        if time.monotonic() > deadline:
            logs = "\n---\n".join(p.log() for p in alive)
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}\n{logs}")
        time.sleep(interval_s)


@dataclass
class PrefectServer:
    """A running `prefect server start` on 127.0.0.1."""

    api_url: str
    background: Background

    def call(self, action: Callable[[PrefectClient], Awaitable[T]]) -> T:
        """Run `action(client)` against this server with a fresh client."""

        async def run() -> T:
            async with PrefectClient(api=self.api_url) as client:
                return await action(client)

        return asyncio.run(run())


def _healthy(api_url: str) -> bool | None:
    try:
        return httpx.get(f"{api_url}/health", timeout=2.0).status_code == 200 or None
    except httpx.HTTPError:
        return None


@contextmanager
def running_prefect_server(
    home: Path, *, timeout_s: float = 90.0, **settings: str
) -> Iterator[PrefectServer]:
    """`prefect server start` with its own PREFECT_HOME (and SQLite) under `home` and
    `settings` (PREFECT_* variables); stopped after. Fails the test if one of Prefect's
    own services logged a failure meanwhile."""
    port = free_port()
    api_url = f"http://127.0.0.1:{port}/api"
    background = start_background(
        [PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        env=clean_env(home, **settings),
        cwd=home,
        log_path=home / "prefect-server.log",
    )
    try:
        wait_until(
            lambda: _healthy(api_url),
            timeout_s=timeout_s,
            what="prefect server health",
            alive=[background],
        )
        yield PrefectServer(api_url=api_url, background=background)
    finally:
        background.stop()
    failures = service_failures(background.log_path.read_text(errors="replace"))
    assert not failures, "Prefect's server logged a failing service:\n" + "\n".join(failures)


# A line Prefect's server logs when one of its own services (scheduler, late runs,
# foreman, ...) fails a pass: docket's task log at ERROR, or the service loop's own.
_SERVICE_FAILURE = re.compile(
    r"\| ERROR +\| (docket\.|prefect\.server\.services|prefect\.server\.events\.services)"
)


def service_failures(log: str) -> list[str]:
    """The lines of a server log where one of Prefect's services failed, each with the
    exception its traceback ends with; a pass lost to write contention is not one."""
    lines = log.splitlines()
    found = []
    for at, line in enumerate(lines):
        if _SERVICE_FAILURE.search(line):
            cause = next((x for x in lines[at + 1 :] if _EXCEPTION_LINE.match(x)), "")
            if not _TRANSIENT_CAUSE.search(cause):
                found.append(f"{line.strip()} -> {cause.strip()}")
    return found


# Prefect's SQLite store takes one writer at a time: with two workers polling on a busy
# host a service's pass can wait out the lock and fail, and the next pass (seconds later)
# does its work. Prefect's answer for many writers is PostgreSQL, not a bug in a pass.
# A service that fails on every pass for this reason still fails its test: what the
# pass should have done (a scheduled run, a ready queue) never happens.
_TRANSIENT_CAUSE = re.compile(r"OperationalError: database is locked")


_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit)\b.*")


def flow_run_final_state(
    server: PrefectServer,
    flow_run_id: Any,
    *,
    timeout_s: float,
    alive: Sequence[Background] = (),
) -> Any:
    """Wait until a flow run reaches a final state; returns that state."""

    async def read_state(client: PrefectClient) -> Any:
        run = await client.read_flow_run(flow_run_id)
        return run.state if run.state is not None and run.state.is_final() else None

    return wait_until(
        lambda: server.call(read_state),
        timeout_s=timeout_s,
        what=f"flow run {flow_run_id} to finish",
        alive=[server.background, *alive],
        interval_s=1.0,
    )
