"""Processes a run left behind: by their PREFECT_HOME, and waiting for them to go."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path


def processes_with(prefect_home: Path) -> list[int]:
    """Live processes whose environment names this PREFECT_HOME (a leftover server)."""
    marker = f"PREFECT_HOME={prefect_home}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            environ = Path(f"/proc/{name}/environ").read_bytes()
        except OSError:
            continue
        if marker in environ.split(b"\0"):
            found.append(int(name))
    return found


def wait_for(check, *, timeout_s: float, what: str):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if value := check():
            return value
        time.sleep(0.1)
    raise AssertionError(f"no {what} within {timeout_s} s")


def servers(prefect_home: Path) -> list[int]:
    """Live temporary Prefect servers of this PREFECT_HOME (not medasr itself)."""
    found = []
    for pid in processes_with(prefect_home):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"prefect.server.api.server:create_app" in command:
            found.append(pid)
    return found


def servers_left(prefect_home: Path, *, within_s: float = 15.0) -> list[int]:
    """The server processes still alive after up to `within_s` (they may take a moment)."""
    deadline = time.monotonic() + within_s
    while (left := servers(prefect_home)) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in left:  # leave no orphan to the next test either
        os.kill(pid, signal.SIGKILL)
    return left
