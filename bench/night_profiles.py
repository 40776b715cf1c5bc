"""The night benchmark's views inside one `medasr run` (bench/night_bench.py).

* `profile`: py-spy attached to medasr's process and to Prefect's server, CPU mode
  (threads the OS sees running), collapsed stacks to read with any flame-graph tool.
* `cpu_by_call`: medasr's CPU by thread and call, from the process itself
  (bench/cpu_by_call/sitecustomize.py): the event loop's thread, then each function
  the worker threads ran (group commits, decoding, fetching), with calls and CPU per
  call. py-spy's samples cannot say that much: in --gil mode a thread that waits for
  the GIL is counted, and in CPU mode one that only blocks may be.

Each expects a fresh store in `work` (night_bench.fresh_store) and a warmed `home`.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

from pipeline_procs import MEDASR, DevServer, _descendants, medasr_env

HOOK = Path(__file__).parent / "cpu_by_call"


def cpu_by_call(source: Path, *, work: Path, home: Path, devserver: dict[str, Any]) -> None:
    """medasr once over `source` with the hook on its path; print its figures."""
    hooked = {"PYTHONPATH": str(HOOK), "BENCH_CPU_BY_CALL": "1"}
    with DevServer(work=work, **devserver) as server:
        command, env = _medasr_run(source, work=work, home=home, server=server, extra=hooked)
        done = subprocess.run(command, env=env, cwd=work, capture_output=True, text=True)
    lines = [line for line in done.stderr.splitlines() if line.startswith("cpu-by-call:")]
    print("\n".join(lines) if lines else f"cpu-by-call: no figures (exit {done.returncode})")


def _medasr_run(
    source: Path, *, work: Path, home: Path, server: DevServer, extra: dict[str, str] | None = None
) -> tuple[list[str], dict[str, str]]:
    """`medasr run SOURCE` and its environment against `server`, in the warmed `home`."""
    env = medasr_env(work, server=server, extra={"PREFECT_HOME": str(home), **(extra or {})})
    return [str(MEDASR), "run", str(source), "--language", "en-IN"], env


def profile(
    source: Path, *, work: Path, home: Path, out_dir: Path, devserver: dict[str, Any]
) -> None:
    """medasr once, its process and Prefect's server each under py-spy (CPU mode)."""
    spy_command = str(py_spy())
    out_dir.mkdir(parents=True, exist_ok=True)
    with DevServer(work=work, **devserver) as server:
        command, env = _medasr_run(source, work=work, home=home, server=server)
        medasr = subprocess.Popen(command, env=env, cwd=work, stdout=subprocess.DEVNULL)
        spies = [_spy(spy_command, medasr.pid, out_dir / "medasr.collapsed")]
        try:
            while medasr.poll() is None and len(spies) == 1:
                for pid, _comm in _descendants(medasr.pid):
                    if "uvicorn" in _cmdline(pid):
                        spies.append(_spy(spy_command, pid, out_dir / "server.collapsed"))
                        break
                time.sleep(0.05)
            medasr.wait()
        finally:
            if medasr.poll() is None:
                medasr.kill()
                medasr.wait()
            for spy in spies:
                spy.wait()
    print(f"profiles: {out_dir}/medasr.collapsed, server.collapsed (collapsed stacks)")


def py_spy() -> Path:
    """py-spy beside medasr's Python (the dev extras pin it)."""
    return MEDASR.parent / "py-spy"


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


def _spy(py_spy: str, pid: int, out: Path) -> subprocess.Popen[bytes]:
    # CPU mode: threads the OS sees running (py-spy leaves idle ones out), not --gil,
    # whose samples include a thread that holds the GIL while it waits.
    command = [py_spy, "record", "--pid", str(pid), "--format", "raw", "--rate", "250",
               "--nonblocking", "-o", str(out)]  # fmt: skip
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
