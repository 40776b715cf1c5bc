"""The real `medasr` command as a subprocess: run it, or start it and kill it mid-way.

Each part gets a `Medasr` with its own working directory (no stray `.env`), PREFECT_HOME
(a copy of one migrated per session, so a run starts in seconds), TMPDIR and database.
The inherited environment is stripped of every MEDASR_* and PREFECT_* variable (`stripped_env`).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.flows.prefect_server import stripped_env

MEDASR = Path(sys.executable).with_name("medasr")
TOKEN = "reliability-token"  # the devservers of the reliability parts accept this one
RUN_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Finished:
    """A command that ran to its end."""

    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    wall_s: float

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def summary(self) -> dict[str, str]:
        """The end-of-run table as {metric: value} (rows look like '│ files done │ 3 │')."""
        rows = re.findall(r"^[│|]\s*([a-z][a-z0-9 ]*?)\s*[│|]\s*(\S+)\s*[│|]$", self.stdout, re.M)
        return {name.replace(" ", "_"): value for name, value in rows}

    def describe(self) -> str:
        tail_out, tail_err = self.stdout[-4000:], self.stderr[-4000:]
        return f"exit {self.returncode}\n--- stdout\n{tail_out}\n--- stderr\n{tail_err}"


@dataclass
class Running:
    """A started command; its output is read by threads as it comes."""

    process: subprocess.Popen[bytes]
    started: float
    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)
    killed_at: float | None = None
    orphans: list[int] = field(default_factory=list)
    peak_rss_mb: float = 0.0  # the medasr process's own high-water mark (VmHWM)

    def __post_init__(self) -> None:
        self._threads = [
            threading.Thread(target=self._pump, args=(self.process.stdout, self.stdout)),
            threading.Thread(target=self._pump, args=(self.process.stderr, self.stderr)),
            threading.Thread(target=self._watch_memory),
        ]
        for thread in self._threads:
            thread.daemon = True
            thread.start()

    @staticmethod
    def _pump(stream, lines: list[str]) -> None:
        for raw in iter(stream.readline, b""):
            lines.append(raw.decode("utf-8", "replace"))
        stream.close()

    def _watch_memory(self) -> None:
        status = f"/proc/{self.process.pid}/status"
        while self.process.poll() is None:
            try:
                with open(status) as handle:
                    for line in handle:
                        if line.startswith("VmHWM:"):
                            self.peak_rss_mb = max(self.peak_rss_mb, int(line.split()[1]) / 1024)
            except (OSError, ValueError):
                return
            time.sleep(0.1)

    def wait_for_output(self, pattern: str, *, timeout_s: float = 120) -> None:
        """Block until a line of stdout or stderr matches `pattern`; fails on exit or timeout."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if any(regex.search(line) for line in [*self.stdout, *self.stderr]):
                return
            if self.process.poll() is not None:
                raise AssertionError(f"medasr ended before {pattern!r}:\n{self.log()}")
            time.sleep(0.002)
        raise AssertionError(f"no {pattern!r} within {timeout_s} s:\n{self.log()}")

    def kill(self) -> float:
        """SIGKILL the medasr process (only it, like the OOM killer); returns the kill time.

        Its children (Prefect's ephemeral API server, ffmpeg) are noted in `orphans`
        and, after the check for them, ended by `end_orphans`.
        """
        before = descendants(self.process.pid)
        self.killed_at = time.time()
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)
        for thread in self._threads:
            thread.join(timeout=10)
        self.orphans = [pid for pid in before if process_exists(pid)]
        return self.killed_at

    def end_orphans(self) -> None:
        """Kill (by pid) the children the killed process left behind, and wait for them."""
        for pid in self.orphans:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
        deadline = time.monotonic() + 10
        while any(process_exists(pid) for pid in self.orphans) and time.monotonic() < deadline:
            time.sleep(0.05)

    def wait(self, *, timeout_s: float = RUN_TIMEOUT_S) -> Finished:
        """Wait for a normal end."""
        self.process.wait(timeout=timeout_s)
        for thread in self._threads:
            thread.join(timeout=10)
        return Finished(
            tuple(map(str, self.process.args)),  # type: ignore[arg-type]
            self.process.returncode,
            "".join(self.stdout),
            "".join(self.stderr),
            time.monotonic() - self.started,
        )

    def log(self) -> str:
        """The last 3,000 characters of stdout and of stderr so far."""
        return "".join(self.stdout)[-3000:] + "".join(self.stderr)[-3000:]


class Medasr:
    """`medasr` with one part's private environment."""

    def __init__(self, *, root: Path, prefect_template: Path, env: dict[str, str]) -> None:
        self.root = root
        self.cwd = root / "cwd"
        self.tmp = root / "tmp"
        self.prefect_home = root / "prefect-home"
        for folder in (self.cwd, self.tmp):
            folder.mkdir(parents=True, exist_ok=True)
        shutil.copytree(prefect_template, self.prefect_home)
        self.env = stripped_env() | {
            "PREFECT_HOME": str(self.prefect_home),
            "TMPDIR": str(self.tmp),
            "COLUMNS": "200",  # the summary table on one line per metric
            **env,
        }

    def command(self, *args: str) -> list[str]:
        return [str(MEDASR), *args]

    def run(self, *args: str, timeout_s: float = RUN_TIMEOUT_S, **env: str) -> Finished:
        """Run to the end and capture everything it printed."""
        started = time.monotonic()
        done = subprocess.run(
            self.command(*args),
            env=self.env | env,
            cwd=self.cwd,
            capture_output=True,
            timeout=timeout_s,
            stdin=subprocess.DEVNULL,
        )
        return Finished(
            tuple(args),
            done.returncode,
            done.stdout.decode("utf-8", "replace"),
            done.stderr.decode("utf-8", "replace"),
            time.monotonic() - started,
        )

    def start(self, *args: str, **env: str) -> Running:
        """Start in the background (its own session, so nothing reaches pytest's terminal)."""
        process = subprocess.Popen(
            self.command(*args),
            env=self.env | env,
            cwd=self.cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        return Running(process=process, started=time.monotonic())

    def temp_leftovers(self) -> list[str]:
        """Whatever is left in this part's TMPDIR."""
        return sorted(str(p.relative_to(self.tmp)) for p in self.tmp.rglob("*"))


def run_side_by_side(workers: list[Medasr], *args: str) -> list[Finished]:
    """`db upgrade` with the first worker, then `args` on every worker at once; each exits 0."""
    upgraded = workers[0].run("db", "upgrade")
    assert upgraded.returncode == 0, upgraded.describe()
    running = [worker.start(*args) for worker in workers]
    finished = [run.wait() for run in running]
    for done in finished:
        assert done.returncode == 0, done.describe()
    return finished


# --- processes ------------------------------------------------------------------------


def _proc_pids() -> Iterator[int]:
    for name in os.listdir("/proc"):
        if name.isdigit():
            yield int(name)


def _parent_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return int(handle.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def process_exists(pid: int) -> bool:
    """True while `pid` runs (zombies count as gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            state = handle.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in (b"Z", b"X")


def descendants(pid: int) -> list[int]:
    """Every process below `pid`."""
    children: dict[int, list[int]] = {}
    for other in _proc_pids():
        parent = _parent_of(other)
        if parent is not None:
            children.setdefault(parent, []).append(other)
    found, stack = [], [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def ffmpeg_processes(mentioning: str) -> list[str]:
    """Command lines of running ffmpeg processes whose arguments mention `mentioning`."""
    found = []
    for pid in _proc_pids():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                argv = handle.read().decode("utf-8", "replace").split("\0")
        except OSError:
            continue
        is_ffmpeg = bool(argv) and "ffmpeg" in os.path.basename(argv[0])
        if is_ffmpeg and mentioning in " ".join(argv) and process_exists(pid):
            found.append(" ".join(argv))
    return found
