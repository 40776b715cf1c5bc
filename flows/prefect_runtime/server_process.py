"""The process of Prefect's temporary server: its command, a port, its death with ours.

flows/prefect_runtime/prefect_api.py starts it and waits for it;
flows/prefect_runtime/prefect_launch.py execs the same command once it has read
Prefect's settings. Nothing here imports Prefect.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import signal
import socket
import sys
from collections.abc import Callable
from pathlib import Path

__all__ = ["die_with_this_process", "free_port", "server_command"]

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>

# `python -m uvicorn ARGS` with Python's cyclic garbage collector paused while Prefect's
# server is imported and its app built, then the objects made meanwhile frozen (kept out
# of later collections) and the collector resumed. The start-up makes a few million
# objects that live as long as the server; the collector walked them again and again
# while they were made: 3.4-3.7 s of CPU became 2.7-2.9 s (`import
# prefect.server.api.server; create_app()`, three runs each).
_SERVER_BOOT = """\
import gc, runpy, sys
gc.disable()
import prefect.server.api.server as server
make_app = server.create_app
def create_app():
    app = make_app()
    gc.freeze()
    gc.enable()
    return app
server.create_app = create_app
sys.argv[0] = "uvicorn"
runpy.run_module("uvicorn", run_name="__main__", alter_sys=True)
"""


def server_command(port: int) -> list[str]:
    """The command Prefect's own `SubprocessASGIServer` runs, on `port` of loopback
    (`python -m uvicorn`, its boot without the collector: `_SERVER_BOOT`)."""
    app_dir = importlib.util.find_spec("prefect")  # found, not imported
    assert app_dir is not None, "prefect is installed"
    assert app_dir.origin is not None, "prefect is a package"
    return [
        sys.executable, "-c", _SERVER_BOOT, "--app-dir", str(Path(app_dir.origin).parents[1]),
        "--factory", "prefect.server.api.server:create_app", "--host", "127.0.0.1",
        "--port", str(port), "--log-level", "error", "--lifespan", "on",
    ]  # fmt: skip


def die_with_this_process() -> Callable[[], None] | None:
    """A preexec function asking the kernel to SIGKILL the child when we die (Linux only).

    Runs in the child between fork and exec: only the prctl call, and a check that we
    did not die before it took effect. The kernel's "parent" is the thread that forks,
    so the server is started from the main thread (flows/cli/run.py does).
    """
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)  # loaded here: the child must not import
    parent_pid = os.getpid()

    def set_death_signal() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent_pid:  # the parent died first: the signal it would send
            os.kill(os.getpid(), signal.SIGKILL)

    return set_death_signal


def free_port() -> int:
    """A loopback TCP port that was free a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
