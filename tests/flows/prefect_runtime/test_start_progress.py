"""A starting server's progress is its process's CPU time: a process that spins makes
progress, one that uses no CPU (stopped, or blocked for good) is stuck after `stall_s`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from flows.prefect_runtime.start_progress import StartProgress, cpu_ticks


@contextmanager
def child(code: str) -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen([sys.executable, "-c", code])
    try:
        yield process
    finally:
        process.kill()
        process.wait(timeout=30)


def watch(progress: StartProgress, *, for_s: float) -> bool:
    """Whether `progress` judged the process stuck at any look over `for_s`."""
    until = time.monotonic() + for_s
    while time.monotonic() < until:
        if progress.stuck():
            return True
        time.sleep(0.1)
    return False


def test_a_spinning_process_is_never_stuck() -> None:
    with child("while True: pass") as spinning:
        assert not watch(StartProgress(spinning.pid, stall_s=1.5), for_s=4.0)


def test_a_stopped_process_is_stuck_after_stall_s() -> None:
    with child("while True: pass") as spinning:
        os.kill(spinning.pid, signal.SIGSTOP)
        progress = StartProgress(spinning.pid, stall_s=1.0)
        assert watch(progress, for_s=10.0)
        assert progress.stalled_s() >= 1.0


def test_a_process_gone_or_unreadable_counts_as_moving() -> None:
    with child("pass") as gone:
        gone.wait(timeout=30)
    assert cpu_ticks(gone.pid) is None
    assert not watch(StartProgress(gone.pid, stall_s=0.5), for_s=1.5)
