"""Where `medasr run`'s start-up goes: imports, checks, Prefect's temporary server, the flow.

Run from the repository root: `.venv/bin/python bench/startup_bench.py [--runs N]
[--code DIR]`. Every figure is the median of N (default 3) wall times of a real
process, in a PREFECT_HOME used before (its database already migrated), over an empty
source folder (so nothing is sent). `--code DIR` times the medasr of another checkout
(e.g. `git archive` of an older commit) with this virtual environment, for a
before/after in the same session: medasr is started as `python -c` with DIR first on
sys.path, the same way for both.

* import: `python -c "import flows.cli"` (Typer, Prefect, SQLAlchemy, httpx...);
* + Prefect's server package: the same plus `import prefect.server.api.server`, which
  Prefect's own start of its temporary server loads into the client process;
* dry run: `medasr run --dry-run` (imports, settings, preflight, listing; no Prefect);
* temporary server alone: its subprocess (as Prefect starts it) until /health answers;
* trivial flow: a one-line `@flow` run: Prefect's temporary server start and stop;
* medasr run (temporary server): the whole command as a cron job would run it;
* medasr run (PREFECT_API_URL): the same against a long-running `prefect server start`.

`--quick` instead times the commands that must answer at once (`medasr --help`, status,
export, review, split, db upgrade) against `python -c "import sqlalchemy"` (target:
each at most 3x), taking turns so that the machine's load falls on all alike; with
`--code DIR` for the medasr of another checkout (before/after).

`--first-request` instead times, from spawn, when `medasr run`'s first request reaches
a loopback devserver (200 distinct short WAVs waiting, warm PREFECT_HOME; target: at
most 3 s), and the whole run; `--before DIR` takes turns with another checkout and
prints the ratio (bench/first_request.py).

`--against-naive` instead times the pipeline bench's row 1 against its naive script
(row 3) the way the issue states the target: start-up included, in a PREFECT_HOME used
before (one `medasr run` over an empty folder first, not counted). Same workload
(bench/out/short, 2,000 x 15 s), devserver at 250 ms, MEDASR_CONCURRENCY=8; medasr and
the naive script take turns, N times; the ratio is the naive script's wall time over
medasr's (>= 1.0 means medasr is at least as fast).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx
import soundfile
from first_request import first_request
from pipeline_procs import (
    PYTHON,
    TRIVIAL_FLOW,
    DevServer,
    machine,
    medasr_env,
    run_measured,
    run_naive,
    scratch_dir,
)
from pipeline_workloads import short_workload

from devserver.tone import encode_tone_dictation

ROOT = Path(__file__).resolve().parents[1]
RUNS = 3
LATENCY_MS = 250  # the pipeline bench's row 1
SERVER_ALONE = """
import subprocess, sys, time, httpx, prefect, socket
from pathlib import Path
with socket.socket() as probe:
    probe.bind(("127.0.0.1", 0)); port = probe.getsockname()[1]
server = subprocess.Popen([sys.executable, "-m", "uvicorn", "--app-dir",
    str(Path(prefect.__file__).parents[1]), "--factory", "prefect.server.api.server:create_app",
    "--host", "127.0.0.1", "--port", str(port), "--log-level", "error", "--lifespan", "on"],
    env={**__import__("os").environ, "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT_UI_ENABLED": "0"})
started = time.perf_counter()
while time.perf_counter() - started < 300:
    try:
        if httpx.get(f"http://127.0.0.1:{port}/api/health").status_code == 200: break
    except httpx.HTTPError:
        time.sleep(0.1)
print(time.perf_counter() - started)
server.terminate(); server.wait(30)
"""


def medasr_command(code: Path, *args: str) -> list[str]:
    """`medasr ARGS` from the checkout at `code`, with this virtual environment."""
    launcher = (
        f"import sys; sys.path.insert(0, {str(code)!r}); sys.argv[0] = 'medasr'; "
        "from flows.cli import main; main()"
    )
    return [str(PYTHON), "-c", launcher, *args]


def timed(command: list[str], *, env: dict[str, str], cwd: Path) -> float:
    """Wall seconds of one run of `command`; exits if it fails."""
    started = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True)
    wall_s = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{command[:3]} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return wall_s


def median_of(command: list[str], *, env: dict[str, str], cwd: Path, runs: int) -> float:
    return statistics.median(timed(command, env=env, cwd=cwd) for _ in range(runs))


def server_alone_s(*, env: dict[str, str], cwd: Path, runs: int) -> float:
    """Median seconds from spawning the temporary server's process to its first /health."""
    figures = []
    for _ in range(runs):
        done = subprocess.run(
            [str(PYTHON), "-c", SERVER_ALONE], env=env, cwd=cwd, capture_output=True, text=True
        )
        if done.returncode != 0:
            sys.exit(f"the temporary server alone failed:\n{done.stderr}")
        figures.append(float(done.stdout.strip().splitlines()[-1]))
    return statistics.median(figures)


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


def against_naive(code: Path, *, runs: int) -> None:
    """Row 1 (2,000 short files) with start-up, warm PREFECT_HOME, against the naive script."""
    source = short_workload()
    rows = []
    for _ in range(runs):
        with (
            scratch_dir("medasr-row1-") as work,
            DevServer(latency_ms=LATENCY_MS, work=work) as srv,
        ):
            env = medasr_env(work, server=srv)
            empty = work / "empty"
            empty.mkdir()
            timed(medasr_command(code, "run", str(empty), "--language", "en-IN"), env=env, cwd=work)
            medasr = run_measured(
                medasr_command(code, "run", str(source), "--language", "en-IN"), env=env, cwd=work
            )
            if medasr.returncode != 0:
                sys.exit(f"medasr run failed ({medasr.returncode}):\n{medasr.output[-3000:]}")
            requests = srv.requests()
        with (
            scratch_dir("medasr-naive-") as work,
            DevServer(latency_ms=LATENCY_MS, work=work) as srv,
        ):
            naive = run_naive(source, work=work, server=srv)
        rows.append((medasr.wall_s, naive.wall_s, requests))
        print(f"medasr {medasr.wall_s:.1f} s ({requests} requests), naive {naive.wall_s:.1f} s")
    print(f"\nMachine: {machine()}; code: {code}; PREFECT_HOME used before.\n")
    print("| medasr run, 2,000 x 15 s, start-up included | naive script | ratio |\n|---|---|---|")
    for medasr_s, naive_s, _ in rows:
        print(f"| {medasr_s:.1f} s | {naive_s:.1f} s | {naive_s / medasr_s:.2f} |")
    ratios = [naive_s / medasr_s for medasr_s, naive_s, _ in rows]
    print(f"\nmedian ratio: {statistics.median(ratios):.2f}")


def quick_commands(code: Path, *, runs: int) -> None:
    """Median wall s of each quick command and of `import sqlalchemy`; prints the ratios."""
    with scratch_dir("medasr-quick-") as work:
        env = medasr_env(work, server=None)
        wav = work / "note.wav"
        soundfile.write(wav, encode_tone_dictation("review in 6 weeks."), 16_000, subtype="PCM_16")
        timed(medasr_command(code, "db", "upgrade"), env=env, cwd=work)
        out = str(work / "out.jsonl")
        commands = {
            "import sqlalchemy": [str(PYTHON), "-c", "import sqlalchemy"],
            "medasr --help": medasr_command(code, "--help"),
            "medasr status": medasr_command(code, "status"),
            "medasr export --format jsonl": medasr_command(
                code, "export", "--format", "jsonl", "--out", out
            ),
            "medasr review": medasr_command(code, "review"),
            "medasr split": medasr_command(code, "split", str(wav), "--out", str(work / "c")),
            "medasr db upgrade": medasr_command(code, "db", "upgrade"),
        }
        walls: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(runs):  # taking turns: a burst of load falls on every command alike
            for name, command in commands.items():
                walls[name].append(timed(command, env=env, cwd=work))
    floor_s = statistics.median(walls["import sqlalchemy"])
    print(f"Machine: {machine()}; median of {runs}, taking turns; code: {code}.")
    print(f"Load average before/after: {LOAD_BEFORE} / {os.getloadavg()[0]:.1f}\n")
    print("| command | wall s (median) | x import sqlalchemy |\n|---|---|---|")
    for name, seconds in walls.items():
        median_s = statistics.median(seconds)
        print(f"| {name} | {median_s:.2f} | {median_s / floor_s:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=RUNS, help="runs per figure (median)")
    parser.add_argument("--code", type=Path, default=ROOT, help="checkout whose medasr to time")
    parser.add_argument(
        "--against-naive", action="store_true", help="row 1 against the naive script"
    )
    parser.add_argument(
        "--quick", action="store_true", help="the quick commands against import sqlalchemy"
    )
    parser.add_argument(
        "--first-request", action="store_true", help="seconds to medasr run's first request"
    )
    parser.add_argument("--before", type=Path, help="with --first-request: the older checkout")
    parser.add_argument("--files", type=int, default=200, help="with --first-request")
    args = parser.parse_args()
    code, runs = args.code.resolve(), args.runs
    if args.first_request:
        checkouts = {"after": code} | ({"before": args.before.resolve()} if args.before else {})
        commands = {
            name: (lambda *a, c=path: medasr_command(c, *a)) for name, path in checkouts.items()
        }
        first_request(commands, checkouts=list(checkouts.values()), runs=runs, files=args.files)
        return
    if args.quick:
        quick_commands(code, runs=runs)
        return
    if args.against_naive:
        against_naive(code, runs=runs)
        return
    with scratch_dir("medasr-startup-") as work:
        empty = work / "empty"
        empty.mkdir()
        env = medasr_env(work, server=None) | {
            "MEDASR_BASE_URL": "http://127.0.0.1:9",
            "MEDASR_TOKEN": "unused",
        }
        run = medasr_command(code, "run", str(empty), "--language", "en-IN")
        timed(run, env=env, cwd=work)  # the first run migrates PREFECT_HOME: not counted
        imports = f"import sys; sys.path.insert(0, {str(code)!r}); import flows.cli"
        figures = {
            "import flows.cli": median_of(
                [str(PYTHON), "-c", imports], env=env, cwd=work, runs=runs
            ),
            "import flows.cli + prefect.server.api.server": median_of(
                [str(PYTHON), "-c", imports + ", prefect.server.api.server"],
                env=env,
                cwd=work,
                runs=runs,
            ),
            "medasr run --dry-run, empty folder (no Prefect)": median_of(
                [*run, "--dry-run"], env=env, cwd=work, runs=runs
            ),
            "temporary server alone, spawn to /health": server_alone_s(
                env=env, cwd=work, runs=runs
            ),
            "trivial flow (temporary server)": median_of(
                [str(PYTHON), "-c", TRIVIAL_FLOW], env=env, cwd=work, runs=runs
            ),
            "medasr run, empty folder (temporary server)": median_of(
                run, env=env, cwd=work, runs=runs
            ),
        }
        server, url = prefect_server(env, cwd=work)
        try:
            figures["medasr run, empty folder (PREFECT_API_URL)"] = median_of(
                run, env=env | {"PREFECT_API_URL": url}, cwd=work, runs=runs
            )
        finally:
            os.killpg(server.pid, 15)
            server.wait(30)
    print(f"Machine: {machine()}; median of {runs}, PREFECT_HOME used before; code: {code}.")
    print(f"Load average before/after: {LOAD_BEFORE} / {os.getloadavg()[0]:.1f}\n")
    print("| step | wall s |\n|---|---|")
    for name, seconds in figures.items():
        print(f"| {re.sub(r'[|]', '/', name)} | {seconds:.2f} |")


LOAD_BEFORE = f"{os.getloadavg()[0]:.1f}"

if __name__ == "__main__":
    main()
