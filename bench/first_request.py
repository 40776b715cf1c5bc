"""`startup_bench.py --first-request`: seconds from spawning `medasr run` to its first request.

Issue 23 §4: with a warm PREFECT_HOME and files waiting, the first request reaches the
service within 3 s of start. A devserver on loopback (its own process, real sockets)
writes a ledger line per request with its arrival time (Unix seconds); the figure is
the earliest arrival minus the spawn time. Each run gets a fresh store (every file
waiting) and a fresh devserver; PREFECT_HOME is warmed by one run over an empty folder
first. With `--before DIR` the two checkouts take turns, so load falls on both alike.
Each checkout is byte-compiled first, as an installed medasr is (this machine sets
PYTHONDONTWRITEBYTECODE, which would otherwise compile ~100 modules on every start).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import soundfile
from pipeline_procs import DevServer, machine, medasr_env, scratch_dir

from devserver.tone import encode_tone_dictation

TARGET_S = 3.0
LATENCY_MS = 50


def waiting_files(root: Path, *, count: int) -> Path:
    """`count` distinct short WAVs (about 1-2 s of tones each)."""
    root.mkdir()
    for n in range(count):
        audio = encode_tone_dictation(f"note {n}. review.")
        soundfile.write(root / f"n{n:05d}.wav", audio, 16_000, subtype="PCM_16")
    return root


def one_run(command: list[str], *, work: Path, run_id: str) -> tuple[float, float]:
    """(seconds to the first request's arrival, total wall seconds) of one `medasr run`."""
    with DevServer(latency_ms=LATENCY_MS, work=work) as srv:
        env = medasr_env(work, server=srv) | {
            "MEDASR_DATABASE_URL": f"sqlite:///{work / f'medasr-{run_id}.db'}"
        }
        spawned_at = time.time()
        started = time.perf_counter()
        done = subprocess.run(command, env=env, cwd=work, capture_output=True, text=True)
        wall_s = time.perf_counter() - started
        if done.returncode != 0:
            sys.exit(f"medasr run failed ({done.returncode}):\n{done.stderr[-3000:]}")
        with srv.ledger.open() as ledger:
            first = min(json.loads(line)["time"] for line in ledger)
    return first - spawned_at, wall_s


def first_request(
    commands: dict[str, Callable[..., list[str]]],
    *,
    checkouts: list[Path],
    runs: int,
    files: int,
) -> None:
    """Median first-request and wall seconds of each checkout's `medasr run`; the ratio."""
    for code in checkouts:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(code)], check=False)
    load_before = os.getloadavg()[0]
    with scratch_dir("medasr-first-") as work:
        source = waiting_files(work / "waiting", count=files)
        empty = work / "empty"
        empty.mkdir()
        figures: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        for name, command in commands.items():  # warm PREFECT_HOME (migrated, used once)
            one_run(command("run", str(source), "-l", "en-IN"), work=work, run_id=f"{name}-w")
        for n in range(runs):  # taking turns
            for name, command in commands.items():
                argv = command("run", str(source), "-l", "en-IN", "--quiet")
                figures[name].append(one_run(argv, work=work, run_id=f"{name}-{n}"))
                first_s, wall_s = figures[name][-1]
                print(f"{name}: first request {first_s:.2f} s, wall {wall_s:.2f} s", flush=True)
    print(f"\nMachine: {machine()}; {files} waiting files, devserver {LATENCY_MS} ms;")
    print(f"median of {runs}, taking turns; load average {load_before:.1f} -> ", end="")
    print(f"{os.getloadavg()[0]:.1f}\n")
    print("| code | first request, s | wall, s |\n|---|---|---|")
    medians = {}
    for name, pairs in figures.items():
        first_s = statistics.median(p[0] for p in pairs)
        wall_s = statistics.median(p[1] for p in pairs)
        medians[name] = first_s
        print(f"| {name} | {first_s:.2f} | {wall_s:.2f} |")
    if "before" in medians and "after" in medians:
        print(f"\nfirst request, before / after: {medians['before'] / medians['after']:.2f}x")
    verdict = "met" if medians["after"] <= TARGET_S else "NOT met"
    print(f"target: first request within {TARGET_S:.0f} s: {verdict} ({medians['after']:.2f} s)")
