"""A command's numpy starts no OpenBLAS thread: one spins for a while after `import numpy`
(0.1 s of CPU each start) for matrix products medasr never makes."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from flows.cli import commands

THREADS_AFTER_NUMPY = """
import os, sys
if sys.argv[1] == "prepared":
    from config.runtime import prepare_numpy_environment
    prepare_numpy_environment()
import numpy
print(len(os.listdir("/proc/self/task")))
"""

# OpenBLAS counts the cores this process may run on (a container's or taskset's share).
needs_two_cores = pytest.mark.skipif(
    len(os.sched_getaffinity(0)) < 2, reason="OpenBLAS starts no thread of its own on one core"
)
# Each of these caps OpenBLAS's threads too: a bare interpreter has none of them.
THREAD_CAPS = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")


def threads_after_numpy(how: str, **environment: str) -> int:
    """Threads of a fresh Python once it has imported numpy (`how`: prepared or bare)."""
    env = {k: v for k, v in os.environ.items() if k not in THREAD_CAPS} | environment
    done = subprocess.run(
        [sys.executable, "-c", THREADS_AFTER_NUMPY, how],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return int(done.stdout)


@needs_two_cores
def test_numpy_imported_after_the_entry_points_preparation_starts_no_thread() -> None:
    assert threads_after_numpy("bare") > 1  # what it would start
    assert threads_after_numpy("prepared") == 1


@needs_two_cores
def test_an_operators_own_thread_count_wins() -> None:
    assert threads_after_numpy("prepared", OPENBLAS_NUM_THREADS="2") == 2


def test_the_entry_point_prepares_numpy_before_running_a_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "unset below")  # so that teardown restores it
    monkeypatch.delenv("OPENBLAS_NUM_THREADS")
    seen: dict[str, str | None] = {}

    def command(**_: object) -> None:  # what a command would find
        seen["threads"] = os.environ.get("OPENBLAS_NUM_THREADS")

    monkeypatch.setattr(commands, "app", command)
    monkeypatch.setattr(commands, "prepare_prefect_environment", lambda: None)
    monkeypatch.setattr(commands, "outlive_readers", lambda: None)
    commands.main()
    assert seen == {"threads": "1"}


def test_no_command_module_is_loaded_before_main_begins() -> None:
    """The commands (which import numpy) load lazily: the preparation comes first."""
    done = subprocess.run(
        [sys.executable, "-c", "import sys, flows.cli; print('numpy' in sys.modules)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "False"
