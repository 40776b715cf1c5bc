"""Where `medasr run`'s start-up goes: imports, checks, Prefect's temporary server, the flow.

Run from the repository root: `.venv/bin/python bench/startup_bench.py`. Every figure is
the median of 3 wall times of a real process, in a PREFECT_HOME used before (its
database already migrated), over an empty source folder (so nothing is sent):

* import: `python -c "import flows.cli"` (Typer, Prefect, SQLAlchemy, httpx...);
* trivial flow: a one-line `@flow` run: Prefect's temporary server start and stop;
* medasr run (temporary server): the whole command as a cron job would run it;
* medasr run (PREFECT_API_URL): the same against a long-running `prefect server start`.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx
from pipeline_procs import MEDASR, PYTHON, TRIVIAL_FLOW, machine, medasr_env, scratch_dir

ROOT = Path(__file__).resolve().parents[1]
RUNS = 3


def timed(command: list[str], *, env: dict[str, str], cwd: Path) -> float:
    """Wall seconds of one run of `command`; exits if it fails."""
    started = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True)
    wall_s = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{command[:3]} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return wall_s


def median_of(command: list[str], *, env: dict[str, str], cwd: Path) -> float:
    return statistics.median(timed(command, env=env, cwd=cwd) for _ in range(RUNS))


def prefect_server(env: dict[str, str], *, cwd: Path) -> tuple[subprocess.Popen[bytes], str]:
    """`prefect server start` on a free port; (process, API URL) once healthy."""
    port = 4200 + os.getpid() % 500
    proc = subprocess.Popen(
        [str(ROOT / ".venv/bin/prefect"), "server", "start", "--port", str(port)],
        env=env,
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}/api"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.5)
    proc.kill()
    sys.exit("prefect server start did not become healthy in 120 s")


def main() -> None:
    with scratch_dir("medasr-startup-") as work:
        empty = work / "empty"
        empty.mkdir()
        env = medasr_env(work, server=None) | {
            "MEDASR_BASE_URL": "http://127.0.0.1:9",
            "MEDASR_TOKEN": "unused",
        }
        run = [str(MEDASR), "run", str(empty), "--language", "en-IN"]
        timed(run, env=env, cwd=work)  # the first run migrates PREFECT_HOME: not counted
        figures = {
            "import flows.cli": median_of(
                [str(PYTHON), "-c", "import flows.cli"], env=env, cwd=ROOT
            ),
            "trivial flow (temporary server)": median_of(
                [str(PYTHON), "-c", TRIVIAL_FLOW], env=env, cwd=work
            ),
            "medasr run, empty folder (temporary server)": median_of(run, env=env, cwd=work),
        }
        server, url = prefect_server(env, cwd=work)
        try:
            figures["medasr run, empty folder (PREFECT_API_URL)"] = median_of(
                run, env=env | {"PREFECT_API_URL": url}, cwd=work
            )
        finally:
            os.killpg(server.pid, 15)
            server.wait(30)
    print(f"Machine: {machine()}; median of {RUNS}, PREFECT_HOME used before.\n")
    print("| step | wall s |\n|---|---|")
    for name, seconds in figures.items():
        print(f"| {re.sub(r'[|]', '/', name)} | {seconds:.2f} |")


if __name__ == "__main__":
    main()
