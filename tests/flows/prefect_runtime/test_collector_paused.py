"""Start-ups that import a lot run with Python's cyclic collector paused, then frozen.

Prefect's temporary server (its boot in `server_command`) and the flows' import in
`medasr run` each make a million objects or more that live as long as the process; the
collector would walk them over and over while they are made (~15-20 % of that CPU).
"""

from __future__ import annotations

import gc
import subprocess
from pathlib import Path

from config.runtime import temporary_server_environment
from flows.cli.flow_run import _collector_paused
from flows.prefect_runtime.server_process import server_command
from tests.flows.prefect_server import _healthy, free_port, wait_until

# In the server's process only: count the full collections run while the collector is
# paused (an explicit gc.collect(): the boot's objects walked once more for nothing);
# once its boot froze the start-up's objects, say what the collector's state is then,
# and whether py-key-value checks its own calls' types at run time.
WATCH = """\
import gc, os, sys, threading, time
if "prefect.server.api.server:create_app" in sys.orig_argv:
    paused_full = []
    def count(phase, info):
        if phase == "start" and info["generation"] == 2 and not gc.isenabled():
            paused_full.append(1)
    gc.callbacks.append(count)
    def watch():
        while not gc.get_freeze_count():
            time.sleep(0.01)
        time.sleep(0.2)
        checks = getattr(sys.modules.get("key_value.aio"), "strategy", None)
        with open(os.environ["COLLECTOR_SEEN"], "w") as out:
            out.write(f"{gc.isenabled()} {gc.get_freeze_count()} {len(paused_full)} {checks}")
    threading.Thread(target=watch, daemon=True).start()
"""


def test_the_server_boots_without_the_collector_then_resumes_it(tmp_path: Path) -> None:
    """Paused through the boot, no full collection (Prefect's PREFECT__SERVER_FINAL asks
    for one), resumed once the app is built; py-key-value's type checks off."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(WATCH)
    seen = tmp_path / "seen"
    environment = temporary_server_environment({}) | {
        "PREFECT_HOME": str(tmp_path / "home"),
        "PYTHONPATH": str(hook),
        "COLLECTOR_SEEN": str(seen),
    }
    port = free_port()
    server = subprocess.Popen(server_command(port), env=environment)
    try:
        wait_until(lambda: _healthy(f"http://127.0.0.1:{port}/api"), timeout_s=120,
                   what="the temporary server")  # fmt: skip
        wait_until(lambda: seen.exists() or None, timeout_s=30, what="the collector's state")
        enabled, frozen, paused_full, checks = seen.read_text().split()
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert enabled == "True"  # resumed once the app was built
    assert int(frozen) > 100_000  # Prefect's server: its modules, classes, functions
    assert paused_full == "0"
    assert checks == "BeartypeStrategy.O0"  # loaded by the server's task queue (docket)


def test_the_collector_is_paused_in_the_block_then_resumed_with_its_objects_frozen() -> None:
    assert gc.isenabled()
    before = gc.get_freeze_count()
    try:
        with _collector_paused():
            assert not gc.isenabled()
            made = [[n] for n in range(1000)]  # objects the collector tracks
        assert gc.isenabled()
        assert gc.get_freeze_count() >= before + len(made)
    finally:
        gc.unfreeze()  # this test process is not a command: hand the objects back


def test_a_collector_paused_by_someone_else_stays_paused() -> None:
    gc.disable()
    try:
        with _collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
        assert gc.get_freeze_count() == 0
    finally:
        gc.enable()
