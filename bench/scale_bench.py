"""Archive scale: discovery, dry run, no-op run, status and export at 10^4..10^6 files.

Every figure is printed beside its floor and their ratio, measured in the same run:
the floor of listing is `find ROOT -type f -printf '%s %T@'` (a `stat` of each file).
The listing tiers use hard links of one 1 s WAV in year/month/day folders (100 files a
day); the request tiers use distinct 1 s WAVs, sent to `medasr devserver --latency-ms 0
--engine hash` (requests counted from its ledger). Peak memory is the process's own
VmHWM (bench/pipeline_procs.py). Growth: the slope of log(wall) against log(N) over the
tiers run (1 = linear).

    .venv/bin/python bench/scale_bench.py --tiers 1e4 1e5        # listing tiers
    .venv/bin/python bench/scale_bench.py --tiers 1e4 --copies 1e4 --distinct 1e4
    .venv/bin/python bench/scale_bench.py --code /path/to/old/checkout ...   # "before"
    .venv/bin/python bench/scale_bench.py --tiers --dry-run-against /path/to/old/checkout
        # the dry run over 10^5 files, this checkout against another, in paired rounds
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sqlite3
import subprocess
import sys
import time
import wave
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.pipeline_procs import (
    LANGUAGE,
    PYTHON,
    ROOT,
    DevServer,
    RunResult,
    machine,
    medasr_env,
    run_measured,
    scratch_dir,
)
from devserver.tone import encode_tone_dictation

RATE_HZ = 16_000
FILES_PER_DAY = 100
LINKS_PER_INODE = 50_000
FLOOR_TRIES = 3  # find runs, the least taken
DISCOVERY_TRIES = 2  # discoveries into fresh stores, the least taken
DONE_SHA = "0" * 64  # the seeded done rows' content: no file has it, so none is reused

DISCOVER = """
import sys, time
sys.path.insert(0, {code!r})
from config.settings import StorageSettings
from storage.database import Store
from tasks.discovery.discover import discover_and_register
store = Store.open(StorageSettings(database_url={url!r}))
started, started_cpu = time.perf_counter(), time.process_time()
found = discover_and_register(source={tree!r}, language={language!r}, store=store, settle_s=0)
print("DISCOVERED", found.listed, found.new, time.perf_counter() - started,
      time.process_time() - started_cpu)
"""


def medasr(code: Path, *args: str) -> list[str]:
    """`medasr ARGS` from the checkout at `code` (before/after), with this virtualenv."""
    launcher = (
        f"import sys; sys.path.insert(0, {str(code)!r}); sys.argv[0] = 'medasr'; "
        "from flows.cli import main; main()"
    )
    return [str(PYTHON), "-c", launcher, *args]


def write_wav(path: Path) -> None:
    """About 1 s of 16 kHz mono tone dictation (the devserver's tone code: it is speech)."""
    samples = encode_tone_dictation("bp ok.")
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(RATE_HZ)
        out.writeframes(samples.tobytes())


def day_folder(root: Path, index: int) -> Path:
    day = index // FILES_PER_DAY
    return root / f"{2000 + day // 336}" / f"{day // 28 % 12 + 1:02d}" / f"{day % 28 + 1:02d}"


def linked_tree(root: Path, n: int) -> Path:
    """`n` hard links of one 1 s WAV, 100 a day folder (a new copy of it every 50,000
    links: ext4 allows 65,000 per inode)."""
    root.mkdir(parents=True)
    then = time.time() - 3600
    for i in range(n):
        if i % LINKS_PER_INODE == 0:
            original = root / f"original-{i // LINKS_PER_INODE}.wav"
            write_wav(original)
            os.utime(original, (then, then))
        folder = day_folder(root / "tree", i)
        if i % FILES_PER_DAY == 0:
            folder.mkdir(parents=True)
        os.link(original, folder / f"{i:07d}.wav")
    return root / "tree"


def distinct_tree(root: Path, n: int) -> Path:
    """`n` distinct 1 s WAVs (the same dictation, its first samples stamped), 100 a day."""
    tone = root / "tone.wav"
    root.mkdir(parents=True)
    write_wav(tone)
    header, body = _split_wav(tone.read_bytes())
    then = time.time() - 3600
    for i in range(n):
        folder = day_folder(root / "tree", i)
        if i % FILES_PER_DAY == 0:
            folder.mkdir(parents=True)
        stamp = i.to_bytes(4, "little")  # 2 samples of difference: a distinct sha256
        path = folder / f"{i:07d}.wav"
        path.write_bytes(header + stamp + body[4:])
        os.utime(path, (then, then))
    return root / "tree"


def _split_wav(data: bytes) -> tuple[bytes, bytes]:
    at = data.index(b"data") + 8
    return data[:at], data[at:]


def floor_s(tree: Path) -> tuple[float, float]:
    """find + stat of every file: (wall, CPU) seconds, the least of FLOOR_TRIES runs after
    one that warms the cache (as medasr's listing finds it warm): others' load only adds."""
    command = ["find", str(tree), "-type", "f", "-printf", "%s %T@\n"]
    best = (math.inf, math.inf)
    for attempt in range(1 + FLOOR_TRIES):
        started = time.perf_counter()
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        if attempt:  # the first one warms the cache
            best = min(best, (wall, usage.ru_utime + usage.ru_stime))
    return best


def seed_done(database: Path) -> int:
    """Mark every registered item done, as a finished run would leave it (one UPDATE)."""
    with sqlite3.connect(database) as db:
        done = db.execute(
            "UPDATE items SET status='done', sha256=?, text='seeded', duration_ms=1000,"
            " chunk_count=1, done_at=CURRENT_TIMESTAMP, attempts=1",
            (DONE_SHA,),
        ).rowcount
    return int(done)


class Tier:
    """The figures of one N over one tree, printed as they come."""

    def __init__(self, *, code: Path, work: Path, tree: Path, n: int) -> None:
        self.code, self.work, self.tree, self.n = code, work, tree, n
        self.database = work / "medasr.db"
        self.figures: dict[str, float] = {}

    def env(self, server: DevServer | None = None) -> dict[str, str]:
        env = medasr_env(self.work, server=server)
        return env | {"PYTHONPATH": str(self.code)}

    def run(self, name: str, *args: str, server: DevServer | None = None) -> RunResult:
        result = run_measured(medasr(self.code, *args), env=self.env(server), cwd=self.work)
        if result.returncode not in (0, 1):
            sys.exit(f"{name} failed ({result.returncode}):\n{result.output[-3000:]}")
        self.figures[name] = result.wall_s
        self.figures[f"{name}_cpu"] = result.own_cpu_s
        self.figures[f"{name}_rss_mb"] = result.sampled.peak_main_mb
        return result

    def discover(self) -> None:
        """Discovery and registration of the whole tree, DISCOVERY_TRIES times into fresh
        stores (the first one is kept): the least wall is the figure."""
        for attempt in range(DISCOVERY_TRIES):
            database = self.database if attempt == 0 else self.work / f"again-{attempt}.db"
            code = DISCOVER.format(
                code=str(self.code),
                url=f"sqlite:///{database}",
                tree=str(self.tree),
                language=LANGUAGE,
            )
            result = run_measured([str(PYTHON), "-c", code], env=self.env(), cwd=self.work)
            line = next(x for x in result.output.splitlines() if x.startswith("DISCOVERED"))
            wall_s, cpu_s = (float(x) for x in line.split()[3:5])
            if attempt == 0 or wall_s < self.figures["discover"]:
                self.figures["discover"] = wall_s
            # its own CPU (imports and opening the store apart): the load hardly moves it
            self.figures["discover_cpu"] = min(self.figures.get("discover_cpu", cpu_s), cpu_s)
            self.figures["discover_rss_mb"] = max(
                self.figures.get("discover_rss_mb", 0.0), result.sampled.peak_main_mb
            )
            if attempt:
                database.unlink()


def listing_tier(code: Path, n: int, *, work: Path) -> dict[str, float]:
    """Floor, discovery, dry runs, no-op run, status and export over n linked files."""
    tree = linked_tree(work / "src", n)
    tier = Tier(code=code, work=work, tree=tree, n=n)
    floor, floor_cpu = floor_s(tree)
    tier.figures |= {"floor": floor, "floor_cpu": floor_cpu}
    say(n, f"find + stat (floor; CPU {floor_cpu:.2f} s)", floor)
    empty = work / "empty"
    empty.mkdir()
    tier.run("dry_startup", "run", str(empty), "--language", LANGUAGE, "--dry-run")
    say(n, "dry run start-up (empty source)", tier.figures["dry_startup"])
    tier.run("dry_new", "run", str(tree), "--language", LANGUAGE, "--dry-run")
    say(n, "dry run, all new (copies of one)", tier.figures["dry_new"], floor,
        tier.figures["dry_new_rss_mb"])  # fmt: skip
    tier.discover()
    say(
        n,
        "discovery + registration",
        tier.figures["discover"],
        floor,
        tier.figures["discover_rss_mb"],
    )
    say(n, "  its CPU, vs find's CPU", tier.figures["discover_cpu"], floor_cpu)
    seed_done(tier.database)
    tier.run("dry_done", "run", str(tree), "--language", LANGUAGE, "--dry-run")
    say(n, "dry run, all done", tier.figures["dry_done"], floor, tier.figures["dry_done_rss_mb"])
    with DevServer(latency_ms=0, work=work) as server:
        tier.run("startup", "run", str(empty), "--language", LANGUAGE, server=server)
        noop = tier.run("noop", "run", str(tree), "--language", LANGUAGE, server=server)
        again = tier.run("startup_again", "run", str(empty), "--language", LANGUAGE, server=server)
        noop_again = tier.run("noop_again", "run", str(tree), "--language", LANGUAGE, server=server)
        requests = server.requests()
    startup = min(tier.figures["startup"], again.wall_s)  # the load of others only adds
    startup_cpu = min(tier.figures["startup_cpu"], again.own_cpu_s)
    tier.figures["noop"] = min(noop.wall_s, noop_again.wall_s)
    tier.figures["noop_cpu"] = min(noop.own_cpu_s, noop_again.own_cpu_s)
    tier.figures["noop_beyond_startup"] = tier.figures["noop"] - startup
    tier.figures["noop_cpu_beyond_startup"] = tier.figures["noop_cpu"] - startup_cpu
    say(n, f"run start-up (empty source; CPU {startup_cpu:.2f} s)", startup)
    say(n, f"no-op run beyond start-up ({requests} requests)",
        tier.figures["noop_beyond_startup"], floor, tier.figures["noop_rss_mb"])  # fmt: skip
    say(n, "  its medasr CPU beyond start-up's, vs find's CPU",
        tier.figures["noop_cpu_beyond_startup"], floor_cpu)  # fmt: skip
    for dry in ("dry_new", "dry_done"):  # what grows with N: the part beyond start-up
        tier.figures[f"{dry}_beyond_startup"] = tier.figures[dry] - tier.figures["dry_startup"]
        tier.figures[f"{dry}_cpu_beyond_startup"] = (
            tier.figures[f"{dry}_cpu"] - tier.figures["dry_startup_cpu"]
        )
    tier.run("status", "status")
    say(n, "status", tier.figures["status"], None, tier.figures["status_rss_mb"])
    tier.run("export", "export", "--format", "jsonl", "--out", str(work / "export.jsonl"))
    say(n, "export jsonl", tier.figures["export"], None, tier.figures["export_rss_mb"])
    return tier.figures


PAIRED_ROUNDS = 3


def dry_run_pairs(code: Path, before: Path, n: int, *, work: Path) -> None:
    """The dry run over n linked files with `code` and with `before`, taking turns for
    PAIRED_ROUNDS rounds: wall and medasr's own CPU, and their ratios (after / before)."""
    tree = linked_tree(work / "src", n)
    rounds: list[tuple[RunResult, RunResult]] = []
    for _ in range(PAIRED_ROUNDS):
        pair = []
        for checkout in (before, code):
            tier = Tier(code=checkout, work=work, tree=tree, n=n)
            pair.append(tier.run("dry", "run", str(tree), "--language", LANGUAGE, "--dry-run"))
        rounds.append((pair[0], pair[1]))
    for i, (old, new) in enumerate(rounds, 1):
        print(
            f"round {i}: dry run over {n} files: before {old.wall_s:.2f} s wall / "
            f"{old.own_cpu_s:.2f} s CPU; after {new.wall_s:.2f} s / {new.own_cpu_s:.2f} s; "
            f"ratio wall {new.wall_s / old.wall_s:.3f}, CPU {new.own_cpu_s / old.own_cpu_s:.3f}"
        )
    best_old = min(old.own_cpu_s for old, _ in rounds)
    best_new = min(new.own_cpu_s for _, new in rounds)
    ratio = best_new / best_old
    print(f"least CPU: before {best_old:.2f} s, after {best_new:.2f} s, ratio {ratio:.3f}")


def request_tier(code: Path, n: int, *, work: Path, copies: bool) -> dict[str, float]:
    """A real first run over n files (copies of one, or distinct), then its start-up."""
    tree = (linked_tree if copies else distinct_tree)(work / "src", n)
    tier = Tier(code=code, work=work, tree=tree, n=n)
    empty = work / "empty"
    empty.mkdir()
    with DevServer(latency_ms=0, work=work) as server:
        start = tier.run("startup", "run", str(empty), "--language", LANGUAGE, server=server)
        first = tier.run("first", "run", str(tree), "--language", LANGUAGE, server=server)
        requests = server.requests()
    beyond_s = first.wall_s - start.wall_s
    cpu_ms = 1000 * (first.own_cpu_s - start.own_cpu_s) / n
    kind = "copies of one" if copies else "distinct 1 s"
    say(n, f"first run, {kind}: {requests} requests, {n / beyond_s:.0f} files/s", first.wall_s,
        None, first.sampled.peak_main_mb)  # fmt: skip
    print(f"  {'':>9}  beyond start-up {1000 * beyond_s / n:.2f} ms/file; medasr CPU "
          f"{cpu_ms:.2f} ms/file (ffmpeg, Prefect's server apart)")  # fmt: skip
    said = summary_counts(first.output)
    print(f"  {'':>9}  its summary: {said.get('requests')} requests, {said.get('retries')} "
          f"retries, {said.get('done')} done; the service's ledger: {requests} requests; "
          f"exit {first.returncode}")  # fmt: skip
    return tier.figures | {"requests": requests, "ms_per_file": 1000 * beyond_s / n,
                           "cpu_ms_per_file": cpu_ms}  # fmt: skip


def summary_counts(output: str) -> dict[str, int]:
    """The counts of a run's summary table (rows such as "│ requests │ 1000 │")."""
    found = re.findall(r"^\W*(requests|retries|done)\W+([\d,]+)\W*$", output, re.M)
    return {name: int(count.replace(",", "")) for name, count in found}


def say(n: int, what: str, wall_s: float, floor: float | None = None, rss_mb: float = 0) -> None:
    ratio = f"  {wall_s / floor:6.1f}x floor" if floor else ""
    rss = f"  {rss_mb:6.0f} MB" if rss_mb else ""
    print(f"N={n:>9,}  {what:<48} {wall_s:9.2f} s{ratio}{rss}", flush=True)


GROWING = (
    "floor",
    "floor_cpu",
    "discover",
    "discover_cpu",
    "dry_new_beyond_startup",
    "dry_new_cpu_beyond_startup",
    "dry_done_beyond_startup",
    "dry_done_cpu_beyond_startup",
    "noop_cpu_beyond_startup",
    "status",
    "export",
    "discover_rss_mb",
    "dry_new_rss_mb",
    "dry_done_rss_mb",
    "noop_rss_mb",
    "export_rss_mb",
)


def growth(by_n: dict[int, dict[str, float]]) -> None:
    """Slope of log(figure) against log(N) (least squares over the tiers run)."""
    if len(by_n) < 2:
        return
    print("growth, slope of log(figure) vs log(N) (1 = linear, 0 = flat):")
    for name in GROWING:
        points = [(math.log(n), math.log(max(f[name], 1e-3))) for n, f in sorted(by_n.items())]
        values = ", ".join(f"{f[name]:.2f}" for _, f in sorted(by_n.items()))
        print(f"  {name:<28} {_slope(points):5.2f}   ({values})")


def _slope(points: Sequence[tuple[float, float]]) -> float:
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    num = sum((x - mean_x) * (y - mean_y) for x, y in points)
    den = sum((x - mean_x) ** 2 for x, _ in points)
    return num / den if den else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiers", nargs="*", default=["1e4", "1e5", "1e6"], help="listing tiers")
    parser.add_argument("--copies", nargs="*", default=[], help="first runs over N copies")
    parser.add_argument("--distinct", nargs="*", default=[], help="first runs over N files")
    parser.add_argument("--code", type=Path, default=ROOT, help="checkout to measure")
    parser.add_argument(
        "--dry-run-against", type=Path, default=None, help="paired dry runs against a checkout"
    )
    parser.add_argument("--dry-run-files", default="1e5", help="files of the paired dry runs")
    args = parser.parse_args()
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {machine()}; code {args.code}")
    by_n: dict[int, dict[str, float]] = {}
    for n in (int(float(t)) for t in args.tiers):
        with scratch_dir("medasr-scale-") as work:
            by_n[n] = listing_tier(args.code, n, work=work)
    growth(by_n)
    if args.dry_run_against is not None:
        with scratch_dir("medasr-scale-") as work:
            n = int(float(args.dry_run_files))
            dry_run_pairs(args.code, args.dry_run_against, n, work=work)
    for copies, sizes in ((True, args.copies), (False, args.distinct)):
        for n in (int(float(t)) for t in sizes):
            with scratch_dir("medasr-scale-") as work:
                request_tier(args.code, n, work=work, copies=copies)


if __name__ == "__main__":
    main()
