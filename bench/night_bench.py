"""The night benchmark: medasr against the script a hospital would otherwise write.

Run from the repository root: `.venv/bin/python bench/night_bench.py [--files 600]`.
The workload of a real night in miniature (bench/night_workload.py): ~15 s dictations
in wav (16/24-bit, float), mp3, m4a, FLAC and Opus, mono and stereo, 8 to 48 kHz. The
service is `medasr devserver --latency-ms 250 --engine default` on loopback in its own
process: every upload is read as a WAV and its tones decoded, as a real service decodes
what it gets. In one process, taking turns round by round:

* the naive script: `find | xargs -P8 sh -c 'ffmpeg ... -ac 1 -ar 16000 t.wav && curl
  -F file=@t.wav ...'` with the bundled ffmpeg and the system curl;
* `medasr run` with MEDASR_CONCURRENCY=8, start-up included, in a PREFECT_HOME used
  before (warmed by a run over one recording), each time on a copy of the SQLite
  store that run migrated (a store used before, no items in it);
* the same `medasr run` over one recording, three times (start-and-stop CPU: the median
  of each figure, since the per-recording figures subtract it and one start of Prefect's
  server varies by a second of CPU from the next);
* medasr against `--capacity 3 --retry-after-s 1` (429 beyond 3 in flight), and in the
  same round the client that knows the capacity: exactly 3 requests in flight, never a
  429, every recording decoded to 16 kHz mono WAV beforehand (by the ffmpeg command,
  outside the measurement); medasr's window is reported as a fraction of its window;
* the same client with 8 in flight against the plain devserver (no capacity): a client
  with no work to do, the request bound in practice. The naive script's wall over its
  wall is about the most any client reaches in that round; medasr's is reported beside.

CPU seconds come from /proc (bench/pipeline_procs.py): medasr's own process, Prefect's
temporary server (its Python child), decoding (the rest of its children: ffmpeg and the
libav workers), the devserver.
The machine may be shared: the ratios within a round are the figures that hold.
`--before DIR` runs another checkout's medasr (`git archive REV | tar -x -C DIR`) in
each round too, against the same naive run. `--profile DIR` also runs medasr once with
py-spy attached to its process and to Prefect's server (CPU mode: running threads);
`--cpu-by-call` once with its CPU told by thread and call (bench/night_profiles.py).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from night_profiles import cpu_by_call, profile, py_spy
from night_workload import recordings
from pipeline_procs import (
    MEDASR,
    DevServer,
    RunResult,
    machine,
    machine_cpu_s,
    medasr_env,
    run_measured,
    scratch_dir,
)

from tasks.audio import find_ffmpeg

LATENCY_MS = 250
CONCURRENCY = 8
CAPACITY = 3
TEMPLATE_DB = "medasr-migrated.db"  # a store used before: migrated, no items
ENGINE = ["--engine", "default"]
DEVSERVER = {"latency_ms": LATENCY_MS, "extra_args": ENGINE}
ROOT = MEDASR.parents[2]
CODE = ["config", "flows", "service", "storage", "tasks"]
NAIVE_SCRIPT = r"""
find "$SRC" -type f -print0 |
xargs -0 -P8 -I{} sh -c '
  out=$(mktemp -p "$OUT" --suffix=.wav)
  "$FFMPEG" -nostdin -loglevel error -y -i "$1" -ac 1 -ar 16000 "$out" &&
  curl -sS -f -H "Authorization: Bearer $TOKEN" -F "file=@$out;type=audio/wav" \
    "$URL/voice/get-asr?language=en-IN" > "$out.json"
  rm -f "$out"
' _ {}
"""
# The client that knows the capacity: 3 threads, each sending one decoded WAV at a time.
KNOWING_CLIENT = r"""
import os, sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
import httpx
wavs = sorted(Path(os.environ["WAVS"]).iterdir())
url = os.environ["URL"] + "/voice/get-asr?language=en-IN"
headers = {"Authorization": "Bearer " + os.environ["TOKEN"]}
def send(path, client):
    answer = client.post(url, headers=headers, files={"file": (path.name, path.read_bytes(),
                                                              "audio/wav")}, timeout=60)
    if answer.status_code != 200:
        sys.exit(f"{path.name}: {answer.status_code}")
clients = [httpx.Client() for _ in range(int(os.environ["IN_FLIGHT"]))]
with ThreadPoolExecutor(len(clients)) as pool:
    for done in [pool.submit(send, p, clients[i % len(clients)]) for i, p in enumerate(wavs)]:
        done.result()
"""


@dataclass
class Measured:
    """One measured command: its wall, CPU by process, and the devserver's ledger."""

    wall_s: float
    medasr_s: float  # the command's own process (bash for the naive script)
    ffmpeg_s: float  # its children but Prefect's server: decoding (ffmpeg, libav workers),
    # and curl for the naive script
    server_s: float  # Prefect's temporary server
    service_s: float  # the devserver
    first_request_s: float  # spawn to the first request's arrival
    slots_full_s: float  # spawn to the CONCURRENCY-th request's arrival (every slot used)
    answers: int
    window_ratio: float = 0.0  # answers per second over the ledger's window / the bound
    prefects_own_servers: int = 0  # servers Prefect started by itself inside medasr

    @property
    def ours_s(self) -> float:
        return self.medasr_s + self.server_s


def measure(
    command: list[str], *, env: dict[str, str], work: Path, server: DevServer, naive: bool = False
) -> Measured:
    """Run `command` against `server`, reading CPU and the ledger afterwards."""
    service_before = server.cpu_s()
    spawned_at = time.time()
    result: RunResult = run_measured(command, env=env, cwd=work)
    if result.returncode != 0:
        sys.exit(f"{command[:2]} exited {result.returncode}:\n{result.output[-3000:]}")
    entries = [json.loads(line) for line in server.ledger.read_text().splitlines()]
    answered = [e for e in entries if e["status"] == 200]
    arrivals = sorted(e["time"] for e in entries) or [spawned_at]
    first = arrivals[0]
    ratio = 0.0
    if answered:
        end = max(e["time"] for e in answered) + LATENCY_MS / 1000
        ratio = len(answered) / (end - first) / (CAPACITY / (LATENCY_MS / 1000))
    return Measured(
        wall_s=result.wall_s,
        medasr_s=result.own_cpu_s,
        # The naive script's tree is all ffmpeg, curl and sh: every child is its work.
        ffmpeg_s=result.children_cpu_s if naive else result.ffmpeg_cpu_s,
        server_s=0.0 if naive else result.prefect_server_cpu_s,
        service_s=server.cpu_s() - service_before,
        first_request_s=first - spawned_at,
        slots_full_s=arrivals[min(CONCURRENCY, len(arrivals)) - 1] - spawned_at,
        answers=len(answered),
        window_ratio=ratio,
        prefects_own_servers=result.output.count("Starting temporary server on"),
    )


def run_naive(source: Path, *, work: Path) -> Measured:
    """The naive script over `source` against a fresh devserver."""
    out = work / "naive-out"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    with DevServer(latency_ms=LATENCY_MS, work=work, extra_args=ENGINE) as server:
        env = dict(os.environ) | {
            "SRC": str(source),
            "OUT": str(out),
            "FFMPEG": find_ffmpeg(),
            "TOKEN": server.token,
            "URL": server.url,
        }
        return measure(["bash", "-c", NAIVE_SCRIPT], env=env, work=work, server=server, naive=True)


def decode_beforehand(source: Path, *, work: Path) -> Path:
    """work/decoded/: every recording of `source` as the ffmpeg command's 16 kHz mono WAV
    (once, outside any measurement: the knowing client's head start)."""
    out = work / "decoded"
    if out.is_dir():
        return out
    out.mkdir()

    def decode(path: Path) -> None:
        command = [find_ffmpeg(), "-nostdin", "-loglevel", "error", "-y", "-i", str(path),
                   "-ac", "1", "-ar", "16000", str(out / f"{path.stem}.wav")]  # fmt: skip
        subprocess.run(command, check=True)

    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(decode, sorted(source.iterdir())))
    return out


def run_knowing_client(decoded: Path, *, work: Path) -> Measured:
    """The client that knows the capacity against a fresh `--capacity 3` devserver."""
    capacity = ["--capacity", str(CAPACITY), "--retry-after-s", "1"]
    return run_decoded_client(decoded, work=work, in_flight=CAPACITY, extra_args=capacity)


def run_idle_client(decoded: Path, *, work: Path) -> Measured:
    """The client with no work to do, CONCURRENCY in flight, against the plain devserver
    medasr's run meets: the request bound in practice."""
    return run_decoded_client(decoded, work=work, in_flight=CONCURRENCY, extra_args=[])


def run_decoded_client(
    decoded: Path, *, work: Path, in_flight: int, extra_args: list[str]
) -> Measured:
    """KNOWING_CLIENT sending the decoded WAVs, `in_flight` at a time, to a fresh devserver."""
    with DevServer(latency_ms=LATENCY_MS, work=work, extra_args=[*ENGINE, *extra_args]) as server:
        env = dict(os.environ) | {"WAVS": str(decoded), "URL": server.url,
                                  "TOKEN": server.token, "IN_FLIGHT": str(in_flight)}  # fmt: skip
        command = [sys.executable, "-c", KNOWING_CLIENT]
        return measure(command, env=env, work=work, server=server, naive=True)


def medasr(code: Path | None, *args: str) -> list[str]:
    """`medasr ARGS`: the installed one, or the checkout at `code` with this environment."""
    if code is None:
        return [str(MEDASR), *args]
    launcher = (
        f"import sys; sys.path.insert(0, {str(code)!r}); sys.argv[0] = 'medasr'; "
        "from flows.cli import main; main()"
    )
    return [str(MEDASR.parent / "python"), "-c", launcher, *args]


def run_medasr(
    source: Path, *, work: Path, home: Path, capacity: bool = False, code: Path | None = None
) -> Measured:
    """`medasr run SOURCE` against a fresh devserver and store, in the used `home`."""
    extra = ["--capacity", str(CAPACITY), "--retry-after-s", "1"] if capacity else []
    fresh_store(work, code=code)
    with DevServer(latency_ms=LATENCY_MS, work=work, extra_args=[*ENGINE, *extra]) as server:
        env = medasr_env(work, server=server, extra={"PREFECT_HOME": str(home)})
        command = medasr(code, "run", str(source), "--language", "en-IN")
        return measure(command, env=env, work=work, server=server)


def start_and_stop(
    one: Path, *, work: Path, home: Path, code: Path | None = None, runs: int = 3
) -> Measured:
    """`medasr run` over one recording `runs` times: the median of each figure (each
    apart: medasr's and the server's CPU may come from different runs), and every server
    Prefect started of its own in any run."""
    measured = [run_medasr(one, work=work, home=home, code=code) for _ in range(runs)]
    medians = Measured(
        **{
            f.name: statistics.median(getattr(m, f.name) for m in measured)
            for f in dataclasses.fields(Measured)
        }
    )
    return dataclasses.replace(
        medians, prefects_own_servers=sum(m.prefects_own_servers for m in measured)
    )


def template_db(code: Path | None) -> str:
    """The migrated store of one checkout: an older medasr refuses a newer one's schema."""
    return TEMPLATE_DB if code is None else f"before-{TEMPLATE_DB}"


def fresh_store(work: Path, *, code: Path | None = None) -> None:
    """work/medasr.db: a copy of the checkout's migrated store, no write-ahead log of an
    earlier run."""
    for leftover in ("medasr.db-wal", "medasr.db-shm"):
        (work / leftover).unlink(missing_ok=True)
    shutil.copyfile(work / template_db(code), work / "medasr.db")


def warm_home(home: Path, *, work: Path, code: Path | None = None) -> None:
    """Prefect's database and medasr's store as on a nightly host: a run over an empty
    folder migrates the store (each measured run starts from a copy of it); then a run
    over one recording, whose flow run makes Prefect's temporary server migrate its
    database (the run over an empty folder ends before the flow, and its server with
    it, possibly before the server has migrated anything)."""
    empty = work / "empty"
    empty.mkdir(exist_ok=True)
    for source in (empty, recordings(1)):
        with DevServer(latency_ms=LATENCY_MS, work=work) as server:
            env = medasr_env(work, server=server, extra={"PREFECT_HOME": str(home)})
            command = medasr(code, "run", str(source), "--language", "en-IN")
            if source == empty:  # each checkout migrates a store of its own from nothing
                (work / "medasr.db").unlink(missing_ok=True)
            subprocess.run(command, env=env, cwd=work, capture_output=True, check=True)
        if source == empty:
            shutil.copyfile(work / "medasr.db", work / template_db(code))
    if not (home / "prefect.db").is_file():
        sys.exit(f"the warm-up left no Prefect database in {home}")


def per_recording_ms(run: Measured, one: Measured, *, files: int, field: str) -> float:
    """CPU ms per recording of `field` beyond the start-and-stop run's."""
    return float(1000 * (getattr(run, field) - getattr(one, field)) / max(files - 1, 1))


def report(files: int, rounds: list[dict[str, Measured]]) -> None:
    """The figures of every round, then the median of each ratio."""
    bound_s = files * LATENCY_MS / 1000 / CONCURRENCY
    print(f"\n{files} recordings; request bound {files} x {LATENCY_MS} ms / {CONCURRENCY}"
          f" = {bound_s:.1f} s; {machine()}; load {os.getloadavg()[0]:.1f}")  # fmt: skip
    header = ("round | naive wall | medasr wall | ratio | first req (every slot used) | CPU s:"
              " medasr / server / decoding / service"
              " | naive CPU s: sh+ffmpeg+curl / service")  # fmt: skip
    print(header)
    ratios = []
    for number, r in enumerate(rounds, 1):
        naive, med = r["naive"], r["medasr"]
        ratios.append(naive.wall_s / med.wall_s)
        print(
            f"{number} | {naive.wall_s:.1f} s | {med.wall_s:.1f} s | {ratios[-1]:.2f}x |"
            f" {med.first_request_s:.2f} s ({med.slots_full_s:.2f} s) |"
            f" {med.medasr_s:.1f} / {med.server_s:.1f} /"
            f" {med.ffmpeg_s:.1f} / {med.service_s:.1f} |"
            f" {naive.medasr_s + naive.ffmpeg_s:.1f} / {naive.service_s:.1f}"
        )
        if med.prefects_own_servers:
            print(f"  ! Prefect started {med.prefects_own_servers} server(s) of its own mid-run")
    print("per recording beyond start-and-stop (ms CPU): round | medasr | server | decoding"
          " | start-and-stop CPU s (medasr + server; median of 3) | naive script"
          " | medasr / naive")  # fmt: skip
    for number, r in enumerate(rounds, 1):
        med, one, naive = r["medasr"], r["one"], r["naive"]
        cells = [per_recording_ms(med, one, files=files, field=f)
                 for f in ("medasr_s", "server_s", "ffmpeg_s")]  # fmt: skip
        # The naive script's CPU is a fixed amount of work: on a slower machine (a busy
        # host) it rises with medasr's, so the fraction holds where milliseconds do not.
        naive_ms = 1000 * (naive.medasr_s + naive.ffmpeg_s) / files
        print(f"{number} | {cells[0]:.1f} | {cells[1]:.1f} | {cells[2]:.1f} |"
              f" {one.ours_s:.1f} ({one.medasr_s:.1f} + {one.server_s:.1f}) |"
              f" {naive_ms:.1f} | {cells[0] / naive_ms:.3f}")  # fmt: skip
    print(f"ratio to the naive script: median {statistics.median(ratios):.2f}x "
          f"(spread {min(ratios):.2f}-{max(ratios):.2f})")  # fmt: skip
    report_bound(rounds)
    for number, r in enumerate(rounds, 1):
        if "capacity" in r:
            med, knowing = r["capacity"], r["knowing"]
            print(f"{number} | capacity {CAPACITY} window: medasr {med.window_ratio:.3f} of its"
                  f" bound ({med.answers} answers, wall {med.wall_s:.1f} s); the client that"
                  f" knows the capacity {knowing.window_ratio:.3f} ({knowing.answers} answers,"
                  f" wall {knowing.wall_s:.1f} s); medasr / knowing client"
                  f" {med.window_ratio / max(knowing.window_ratio, 1e-9):.3f}")  # fmt: skip


def report_bound(rounds: list[dict[str, Measured]]) -> None:
    """Per round, the client with no work to do (8 in flight, WAVs decoded beforehand)
    against the same devserver: about the most any client reaches over the naive script."""
    for number, r in enumerate(rounds, 1):
        if "bound" in r:
            naive, med, bound = r["naive"], r["medasr"], r["bound"]
            print(f"{number} | the client with no work to do, {CONCURRENCY} in flight: wall"
                  f" {bound.wall_s:.1f} s (first request {bound.first_request_s:.2f} s);"
                  f" the naive script / it {naive.wall_s / bound.wall_s:.2f}x (about the most any"
                  f" client reaches this round); medasr / it"
                  f" {bound.wall_s / med.wall_s:.3f}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=600, help="recordings (600 for the record)")
    parser.add_argument("--rounds", type=int, default=2, help="naive/medasr turns (0: none)")
    parser.add_argument(
        "--skip-capacity",
        action="store_true",
        help="no capacity-3 runs (medasr, knowing client) nor the client with no work to do",
    )
    parser.add_argument(
        "--before", type=Path, help="another checkout's medasr, taking turns with this one"
    )
    parser.add_argument("--profile", type=Path, help="also a py-spy profile into this folder")
    parser.add_argument(
        "--cpu-by-call", action="store_true", help="also medasr's CPU by thread and call, once"
    )
    args = parser.parse_args()
    if args.profile and not py_spy().exists():
        parser.error(f"--profile needs py-spy: {MEDASR.parent / 'pip'} install -e '.[dev]'")
    source, one = recordings(args.files), recordings(1)
    # As installed: byte-compiled (PYTHONDONTWRITEBYTECODE would recompile every start).
    for code in [ROOT, *([args.before] if args.before else [])]:
        subprocess.run([sys.executable, "-m", "compileall", "-q", *CODE], cwd=code, check=False)
    rounds: list[dict[str, Measured]] = []
    befores: list[dict[str, Measured]] = []  # the --before checkout, same naive runs
    with scratch_dir("medasr-night-") as work:
        home = work / "prefect-home"
        if args.before:  # its own migrated store; Prefect's database is shared
            warm_home(home, work=work, code=args.before)
        warm_home(home, work=work)
        decoded = None if args.skip_capacity else decode_beforehand(source, work=work)
        for number in range(args.rounds):
            print(f"round {number + 1}: naive, medasr, one recording ...", flush=True)
            before = machine_cpu_s()
            naive = run_naive(source, work=work)
            med = run_medasr(source, work=work, home=home)
            single = start_and_stop(one, work=work, home=home)
            rounds.append({"naive": naive, "medasr": med, "one": single})
            if decoded is not None:
                rounds[-1]["bound"] = run_idle_client(decoded, work=work)
            if args.before:
                before_med = run_medasr(source, work=work, home=home, code=args.before)
                before_one = start_and_stop(one, work=work, home=home, code=args.before)
                befores.append({"naive": naive, "medasr": before_med, "one": before_one})
            if decoded is not None:
                print("   capacity 3: medasr, the client that knows it ...", flush=True)
                rounds[-1]["capacity"] = run_medasr(source, work=work, home=home, capacity=True)
                rounds[-1]["knowing"] = run_knowing_client(decoded, work=work)
            print(f"   machine CPU during the round: {machine_cpu_s() - before:.0f} s", flush=True)
        if args.profile:
            fresh_store(work)
            profile(source, work=work, home=home, out_dir=args.profile, devserver=DEVSERVER)
        if args.cpu_by_call:
            fresh_store(work)
            cpu_by_call(source, work=work, home=home, devserver=DEVSERVER)
    if befores:
        print(f"\n=== before: {args.before}")
        report(args.files, befores)
        print("\n=== this checkout")
    if rounds:
        report(args.files, rounds)


if __name__ == "__main__":
    main()
