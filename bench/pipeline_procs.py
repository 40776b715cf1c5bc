"""Processes of the pipeline benchmark: the devserver, `medasr run`, the references, sampling.

Every figure comes from /proc: CPU seconds from /proc/PID/stat (a process's own and its
waited-for children's, read while it is a zombie, before it is reaped), peak memory from
VmHWM sampled every 0.1 s (VmHWM is the process's own peak resident set; getrusage
would count the parent's pages that a vfork child inherits).
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from tasks.audio import find_ffmpeg

ROOT = Path(__file__).resolve().parents[1]
MEDASR = ROOT / ".venv" / "bin" / "medasr"
PYTHON = ROOT / ".venv" / "bin" / "python"
TICKS_PER_S = os.sysconf("SC_CLK_TCK")
LANGUAGE = "en-IN"
SAMPLE_EVERY_S = 0.1


def machine() -> str:
    """nproc, CPU model and RAM of this machine."""
    cpu = "unknown CPU"
    found = re.search(r"^model name\s*:\s*(.+)$", Path("/proc/cpuinfo").read_text(), re.M)
    if found:
        cpu = found.group(1).strip()
    ram_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{os.cpu_count()} CPUs ({cpu}), {ram_gib:.0f} GiB RAM, Python {sys.version.split()[0]}"


def cpu_times(pid: int) -> tuple[float, float]:
    """(own, waited-for children) CPU seconds of a live or zombie process; (0, 0) if gone."""
    stat = _read(f"/proc/{pid}/stat")
    if not stat:
        return 0.0, 0.0
    fields = stat.rsplit(")", 1)[1].split()
    utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
    return (utime + stime) / TICKS_PER_S, (cutime + cstime) / TICKS_PER_S


def machine_cpu_s() -> float:
    """CPU seconds the whole machine has been busy since boot (every process, ours or not)."""
    fields = [int(x) for x in _read("/proc/stat").split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / TICKS_PER_S


def wait_for_quiet(*, max_wait_s: float, busy_below: float = 0.15, window_s: float = 3.0) -> float:
    """Wait until the machine is nearly idle (other people's test runs share it); seconds waited.

    Gives up after `max_wait_s`: the foreign load is then reported beside the figures.
    """
    started = time.monotonic()
    while True:
        before = machine_cpu_s()
        time.sleep(window_s)
        busy = (machine_cpu_s() - before) / (window_s * (os.cpu_count() or 1))
        waited = time.monotonic() - started
        if busy < busy_below or waited >= max_wait_s:
            return waited


def _read(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("ascii", errors="replace")
    except OSError:
        return ""


def _status_kb(pid: int, name: str) -> int:
    found = re.search(rf"^{name}:\s+(\d+) kB", _read(f"/proc/{pid}/status"), re.M)
    return int(found.group(1)) if found else 0


def _descendants(root: int) -> list[tuple[int, str]]:
    """(pid, comm) of every descendant of `root` (one pass over /proc: ~2 ms here)."""
    tree: dict[int, list[tuple[int, str]]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (stat := _read(f"/proc/{name}/stat")):
            comm, rest = stat.rsplit(")", 1)
            tree.setdefault(int(rest.split()[1]), []).append((int(name), comm.split("(", 1)[1]))
    found, todo = [], list(tree.get(root, []))
    while todo:
        found.append(todo.pop())
        todo += tree.get(found[-1][0], [])
    return found


@dataclass
class Sampled:
    """What sampling a process tree saw."""

    peak_main_mb: float = 0.0  # VmHWM of the process itself
    peak_ffmpeg_mb: float = 0.0  # largest sum of VmRSS over its ffmpeg descendants
    peak_other_mb: float = 0.0  # largest VmHWM of any other descendant (Prefect's server)
    other_cpu_s: dict[int, float] = field(default_factory=dict)  # long-lived python children
    decoder_pids: set[int] = field(default_factory=set)  # of those, libav decoding workers


def _is_decoder(pid: int) -> bool:
    """Whether `pid` is a libav decoding worker (tasks/audio/decoder_pool.py)."""
    try:
        return b"tasks.libav.worker" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


class TreeSampler:
    """Samples a process (every 0.1 s) and its descendants (every 0.2 s) in a thread.

    Kept cheap: the sampler shares the two cores with what it measures.
    """

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.result = Sampled()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        tick = 0
        while not self._stop.is_set():
            self._sample(tree=tick % 2 == 0)
            tick += 1
            self._stop.wait(SAMPLE_EVERY_S)

    def _sample(self, *, tree: bool) -> None:
        res = self.result
        res.peak_main_mb = max(res.peak_main_mb, _status_kb(self.pid, "VmHWM") / 1024)
        if not tree:
            return
        ffmpeg_kb = 0
        for pid, comm in _descendants(self.pid):
            if comm.startswith("ffmpeg"):
                ffmpeg_kb += _status_kb(pid, "VmRSS")
                continue
            res.peak_other_mb = max(res.peak_other_mb, _status_kb(pid, "VmHWM") / 1024)
            own, kids = cpu_times(pid)
            if own + kids:
                if pid not in res.other_cpu_s and _is_decoder(pid):
                    res.decoder_pids.add(pid)
                res.other_cpu_s[pid] = own + kids
        res.peak_ffmpeg_mb = max(res.peak_ffmpeg_mb, ffmpeg_kb / 1024)

    def stop(self) -> Sampled:
        """Stop; the caller samples no more (the process is a zombie by now)."""
        self._stop.set()
        self._thread.join()
        return self.result


@dataclass
class RunResult:
    """One `medasr run` (or any command) as measured from outside."""

    returncode: int
    wall_s: float
    own_cpu_s: float  # the medasr Python process itself
    children_cpu_s: float  # everything it started and waited for (ffmpeg, Prefect's server)
    prefect_server_cpu_s: float
    sampled: Sampled
    output: str
    machine_cpu_s: float = 0.0  # every process on the machine, during the run

    def foreign_cpu_s(self, *, also_ours_s: float = 0.0) -> float:
        """CPU the machine spent on other work during the run (others' tests, say)."""
        return max(0.0, self.machine_cpu_s - self.own_cpu_s - self.children_cpu_s - also_ours_s)

    @property
    def ffmpeg_cpu_s(self) -> float:
        """Children CPU minus the Prefect server's: the decoding (ffmpeg, probes included,
        and libav workers)."""
        return max(0.0, self.children_cpu_s - self.prefect_server_cpu_s)


def run_measured(command: Sequence[str], *, env: dict[str, str], cwd: Path) -> RunResult:
    """Run `command`, sampling its tree; CPU read from its zombie before reaping it."""
    log = cwd / "output.log"
    with open(log, "wb") as out:
        machine_before = machine_cpu_s()
        started = time.perf_counter()
        proc = subprocess.Popen(list(command), env=env, cwd=cwd, stdout=out, stderr=out)
        sampler = TreeSampler(proc.pid)
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
        wall_s = time.perf_counter() - started
        machine_s = machine_cpu_s() - machine_before
        sampled = sampler.stop()
        own_cpu_s, children_cpu_s = cpu_times(proc.pid)
        proc.wait()
    alive = {pid for pid in sampled.other_cpu_s if Path(f"/proc/{pid}").exists()}
    reaped = sum(
        cpu
        for pid, cpu in sampled.other_cpu_s.items()
        if pid not in alive and pid not in sampled.decoder_pids
    )
    return RunResult(
        returncode=proc.returncode,
        wall_s=wall_s,
        own_cpu_s=own_cpu_s,
        children_cpu_s=children_cpu_s,
        prefect_server_cpu_s=reaped,
        sampled=sampled,
        output=log.read_text(errors="replace"),
        machine_cpu_s=machine_s,
    )


class DevServer:
    """`medasr devserver` in its own process (its CPU is not medasr's), with a ledger file."""

    def __init__(self, *, latency_ms: float, work: Path, extra_args: Sequence[str] = ()) -> None:
        self.token = secrets.token_urlsafe(16)
        self.ledger = work / f"ledger-{latency_ms:g}ms-{secrets.token_hex(3)}.jsonl"
        command = [
            str(MEDASR), "devserver", "--port", "0", "--token", self.token,
            "--latency-ms", f"{latency_ms:g}", "--engine", "hash", "--ledger", str(self.ledger),
            *extra_args,
        ]  # fmt: skip
        self.proc = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=work
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        found = re.search(r"listening on (http://\S+)", line)
        if not found:
            self.stop()
            raise RuntimeError(f"devserver did not start: {line!r}")
        self.url = found.group(1)

    def requests(self) -> int:
        """Requests the devserver answered so far."""
        if not self.ledger.exists():
            return 0
        with open(self.ledger, "rb") as handle:
            return sum(1 for _ in handle)

    def cpu_s(self) -> float:
        """CPU seconds it used so far."""
        return sum(cpu_times(self.proc.pid))

    def stop(self) -> None:
        """Stop it and reap it."""
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> DevServer:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()


@contextlib.contextmanager
def scratch_dir(prefix: str) -> Iterator[Path]:
    """A temp directory removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def medasr_env(
    work: Path, *, server: DevServer | None, extra: dict[str, str] | None = None
) -> dict[str, str]:
    """Environment of one `medasr run`: own PREFECT_HOME and SQLite file, the devserver."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEDASR_", "PREFECT_"))}
    env |= {
        "PREFECT_HOME": str(work / "prefect-home"),
        "MEDASR_DATABASE_URL": f"sqlite:///{work / 'medasr.db'}",
        "MEDASR_CONCURRENCY": "8",
        "MEDASR_PIPELINE__SETTLE_S": "0",
        # A fresh PREFECT_HOME migrates Prefect's database first: >20 s on a busy machine.
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
    }
    if server is not None:
        env |= {"MEDASR_BASE_URL": server.url, "MEDASR_TOKEN": server.token}
    return env | (extra or {})


def run_medasr(source: Path, *, work: Path, server: DevServer) -> RunResult:
    """`medasr run SOURCE --language en-IN` as a cron job would run it (no terminal)."""
    env = medasr_env(work, server=server)
    return run_measured(
        [str(MEDASR), "run", str(source), "--language", LANGUAGE], env=env, cwd=work
    )


TRIVIAL_FLOW = """
from prefect import flow
@flow
def trivial() -> int:
    return 1
trivial()
"""


def prefect_startup_s(work: Path) -> RunResult:
    """A trivial flow run in a fresh PREFECT_HOME: Prefect's own start-up and shut-down."""
    env = medasr_env(work, server=None)
    env.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    return run_measured([str(PYTHON), "-c", TRIVIAL_FLOW], env=env, cwd=work)


def task_runs(work: Path) -> int:
    """Task runs recorded by the run's ephemeral Prefect API (its SQLite in PREFECT_HOME)."""
    database = work / "prefect-home" / "prefect.db"
    with contextlib.closing(sqlite3.connect(database)) as connection:
        return int(connection.execute("select count(*) from task_run").fetchone()[0])


def ffmpeg_pool(
    files: Sequence[Path], *, out_dir: Path, workers: int
) -> tuple[float, float, float]:
    """The decode bound: the ffmpeg CLI to 16 kHz mono WAV, `workers` processes at once.

    Returns (wall seconds, CPU seconds of the ffmpeg processes, machine CPU seconds).
    """
    before, machine_before = os.times(), machine_cpu_s()

    def convert(index_path: tuple[int, Path]) -> None:
        index, path = index_path
        target = out_dir / f"{index:05d}.wav"
        command = [find_ffmpeg(), "-nostdin", "-loglevel", "error", "-y", "-threads", "1",
                   "-i", str(path), "-ac", "1", "-ar", "16000", str(target)]  # fmt: skip
        subprocess.run(command, check=True)
        target.unlink()

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(convert, enumerate(files)))
    wall_s = time.perf_counter() - started
    after = os.times()
    cpu_s = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return wall_s, cpu_s, machine_cpu_s() - machine_before


NAIVE_SCRIPT = r"""
find "$SRC" -type f \( -name '*.mp3' -o -name '*.wav' \) -print0 |
xargs -0 -P8 -I{} sh -c '
  out=$(mktemp -p "$OUT" --suffix=.wav)
  "$FFMPEG" -nostdin -loglevel error -y -threads 1 -i "$1" -ac 1 -ar 16000 "$out" &&
  curl -sS -f -H "Authorization: Bearer $TOKEN" -F "file=@$out;type=audio/wav" \
    "$URL/voice/get-asr?language=en-IN" > "$out.json"
  rm -f "$out"
' _ {}
"""


def run_naive(source: Path, *, work: Path, server: DevServer) -> RunResult:
    """The naive script: find | xargs -P8 running ffmpeg then curl per file."""
    out = work / "naive-out"
    out.mkdir()
    env = dict(os.environ) | {
        "SRC": str(source),
        "OUT": str(out),
        "FFMPEG": find_ffmpeg(),
        "TOKEN": server.token,
        "URL": server.url,
    }
    result = run_measured(["bash", "-c", NAIVE_SCRIPT], env=env, cwd=work)
    result.output += f"\nresponses: {len(list(out.glob('*.json')))}"
    return result
