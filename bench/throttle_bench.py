"""Throttling benchmark: how much of a capacity-limited service does `medasr run` use?

Run from the repository root: `.venv/bin/python bench/throttle_bench.py [--write-readme]`.
Each row is `medasr run` (its own process, SQLite store) over 300 short WAVs against
`medasr devserver --capacity C --retry-after-s 1 --latency-ms 250 --engine hash` in
another process. Every figure comes from the devserver's ledger and medasr's store:

* the bound: C requests in flight / 0.25 s (12 req/s for C = 3);
* the window: first request's arrival to the last answer (last 200's arrival + 250 ms);
* the ratio: answers per second over the window / the bound (same run, same ledger);
* concurrency over time: requests in flight at the devserver, every 0.5 s, as a sparkline.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import sqlite3
import sys
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile
from pipeline_procs import DevServer, machine, medasr_env, run_measured, scratch_dir
from pipeline_workloads import OUT, WAV_RATE_HZ, dictation

ROOT = Path(__file__).resolve().parents[1]
MEDASR = ROOT / ".venv" / "bin" / "medasr"
README = Path(__file__).resolve().parent / "README.md"
FILES = 300
FILE_S = 3.0
# Capacity 16 (64 req/s) is beyond what one process's per-file work reaches on 2 cores,
# so that row sends many small chunks per file: the service, not the files, is the limit.
CHUNKED_FILES = 60
CHUNKED_FILE_S = 40.0
CHUNKED_UPLOAD_BYTES = 64_000  # MEDASR_MAX_UPLOAD_BYTES: about 2 s of audio per request
LATENCY_MS = 250
RETRY_AFTER_S = 1
SPARK = "▁▂▃▄▅▆▇█"
BUCKET_S = 0.5


@dataclass(frozen=True)
class Row:
    """One scenario's figures."""

    capacity: int
    latency_ms: int
    files: int
    concurrency: int | None  # MEDASR_CONCURRENCY, None for the default
    reference: bool  # no --capacity; exactly `capacity` in flight, never throttled
    target: float
    wall_s: float
    requests: int
    throttled: int
    statuses: dict[str, int]
    window_s: float
    answers: int
    peak_in_flight: int
    spark: str

    @property
    def bound_per_s(self) -> float:
        return self.capacity / (self.latency_ms / 1000)

    @property
    def ratio(self) -> float:
        return (self.answers / self.window_s) / self.bound_per_s if self.window_s else 0.0

    @property
    def throttled_share(self) -> float:
        return self.throttled / max(self.requests, 1)


def workload(files: int = FILES, seconds: float = FILE_S) -> Path:
    """Different tone dictations, 16 kHz mono WAV (decoding is not the bottleneck)."""
    folder = OUT / f"throttle-{files}x{seconds:g}s"
    if len(list(folder.glob("*.wav"))) == files:
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    for index in range(files):
        samples = dictation(50_000 + index, seconds=seconds, sample_rate_hz=WAV_RATE_HZ)
        soundfile.write(folder / f"t{index:04d}.wav", samples, WAV_RATE_HZ, subtype="PCM_16")
    return folder


def in_flight_series(
    entries: list[dict], *, start: float, end: float, latency_s: float
) -> list[float]:
    """Mean requests in flight at the devserver per BUCKET_S, from admitted arrivals."""
    spans = [(e["time"], e["time"] + latency_s) for e in entries if e["status"] == 200]
    steps = np.arange(start, end, 0.05)
    counts = np.zeros(len(steps))
    for begin, finish in spans:
        counts += (steps >= begin) & (steps < finish)
    per = max(1, round(BUCKET_S / 0.05))
    return [float(counts[i : i + per].mean()) for i in range(0, len(counts), per)]


def sparkline(series: list[float], *, top: float) -> str:
    steps = len(SPARK) - 1
    return "".join(SPARK[min(steps, int(v / top * steps + 0.5))] for v in series)


def run_row(
    source: Path,
    *,
    capacity: int,
    concurrency: int | None,
    target: float,
    home: Path,
    reference: bool = False,
    extra_env: dict[str, str] | None = None,
    latency_ms: int = LATENCY_MS,
) -> Row:
    """One `medasr run`; `reference`: no --capacity, MEDASR_CONCURRENCY=capacity (fixed)."""
    with scratch_dir("medasr-throttle-") as work:
        args = ["--retry-after-s", str(RETRY_AFTER_S)]
        if not reference:
            args += ["--capacity", str(capacity)]
        with DevServer(latency_ms=latency_ms, work=work, extra_args=args) as server:
            extra = {"PREFECT_HOME": str(home)} | (extra_env or {})
            env = medasr_env(work, server=server, extra=extra)
            env.pop("MEDASR_CONCURRENCY")  # default settings unless the row says otherwise
            if concurrency is not None or reference:
                env["MEDASR_CONCURRENCY"] = str(capacity if reference else concurrency)
            result = run_measured(
                [str(MEDASR), "run", str(source), "--language", "en-IN"], env=env, cwd=work
            )
            entries = [json.loads(line) for line in server.ledger.read_text().splitlines()]
        with closing(sqlite3.connect(work / "medasr.db")) as db:
            statuses = dict(db.execute("select status, count(*) from items group by status"))
    if result.returncode not in (0, 1):
        sys.exit(f"medasr run failed ({result.returncode}):\n{result.output[-3000:]}")
    answered = [e for e in entries if e["status"] == 200]
    start = min(e["time"] for e in entries)
    end = max(e["time"] for e in answered) + latency_ms / 1000
    series = in_flight_series(entries, start=start, end=end, latency_s=latency_ms / 1000)
    return Row(
        capacity=capacity,
        latency_ms=latency_ms,
        files=sum(statuses.values()),
        concurrency=capacity if reference else concurrency,
        reference=reference,
        target=target,
        wall_s=result.wall_s,
        requests=len(entries),
        throttled=sum(1 for e in entries if e["status"] == 429),
        statuses=statuses,
        window_s=end - start,
        answers=len(answered),
        peak_in_flight=max((e.get("in_flight") or 0) for e in answered),
        spark=sparkline(series, top=capacity),
    )


def table(rows: list[Row]) -> str:
    lines = [
        "| devserver | MEDASR_CONCURRENCY | files transcribed / failed | requests | 429s | "
        "window | bound | ratio to bound (target) | met | vs fixed C, unthrottled |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    references = {(row.capacity, row.latency_ms): row for row in rows if row.reference}
    for row in rows:
        # Held for review is transcribed (the quality gate judges the hash engine's text,
        # not the throughput): it counts as done in one run.
        held = row.statuses.get("needs_review", 0)
        done, failed = row.statuses.get("done", 0) + held, row.statuses.get("failed", 0)
        met = (
            row.ratio >= row.target
            and failed == 0
            and done == row.files
            and (row.capacity != 3 or row.throttled_share <= 0.10)
        )
        reference = references.get((row.capacity, row.latency_ms))
        versus = "-" if row.reference or reference is None else f"{row.ratio / reference.ratio:.2f}"
        server = _name(row)
        verdict = "(reference)" if row.reference else ("yes" if met else "**no**")
        files = f"{done} ({held} held)" if held else str(done)
        lines.append(
            f"| {server} | {row.concurrency or 'default (8)'} | {files} / {failed} | "
            f"{row.requests} | {row.throttled} ({row.throttled_share:.0%}) | {row.window_s:.1f} s"
            f" | {row.bound_per_s:g} req/s | {row.ratio:.2f} (>= {row.target}) | {verdict} | "
            f"{versus} |"
        )
    return "\n".join(lines)


def _name(row: Row) -> str:
    latency = f"{row.latency_ms} ms"
    if row.reference:
        return f"no cap, fixed {row.capacity}, {latency}"
    return f"--capacity {row.capacity}, {latency}"


def sparks(rows: list[Row]) -> str:
    lines = [f"Requests in flight at the devserver, every {BUCKET_S:g} s (full block = capacity):"]
    lines += ["", "```"]
    for row in rows:
        lines.append(f"{_name(row):>26}: {row.spark}")
    lines.append("```")
    return "\n".join(lines)


def report(rows: list[Row], *, label: str) -> str:
    header = (
        f"### {label}\n\nCommand: `.venv/bin/python bench/throttle_bench.py --write-readme "
        f"--label {label!r}`.\nDate: {datetime.date.today().isoformat()}. Machine: {machine()}.\n"
        f"Capacity 3: {FILES} WAVs of {FILE_S:g} s (one request each); capacity 16: "
        f"{CHUNKED_FILES} WAVs of {CHUNKED_FILE_S:g} s sent in ~2 s chunks "
        f"(MEDASR_MAX_UPLOAD_BYTES={CHUNKED_UPLOAD_BYTES}). Devserver `--capacity C "
        f"--retry-after-s {RETRY_AFTER_S} --latency-ms L --engine hash` (L = {LATENCY_MS} "
        "unless the row says 1000 ms). Reference rows: no --capacity, MEDASR_CONCURRENCY=C "
        "fixed: what this machine's medasr reaches with exactly C in flight, never throttled.\n"
    )
    return f"{header}\n{table(rows)}\n\n{sparks(rows)}\n"


def write_readme(section: str, *, label: str) -> None:
    text = README.read_text()
    marker = re.compile(rf"### {re.escape(label)}\n.*?(?=\n### |\n## |\Z)", re.S)
    if "## Throttling" not in text:
        text = text.rstrip("\n") + "\n\n## Throttling\n"
    if marker.search(text):
        text = marker.sub(lambda _m: section.rstrip("\n"), text)
    else:
        text = text.rstrip("\n") + "\n\n" + section
    README.write_text(text.rstrip("\n") + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-readme", action="store_true")
    parser.add_argument("--label", default="after")
    parser.add_argument("--only", nargs="*", default=None, help="scenarios: c3 c16 c3-1s")
    options = parser.parse_args()
    chunked = {"MEDASR_MAX_UPLOAD_BYTES": str(CHUNKED_UPLOAD_BYTES)}
    scenarios = {  # name: (capacity, MEDASR_CONCURRENCY, target, source, env, latency ms)
        "c3": (3, None, 0.8, workload(), {}, LATENCY_MS),
        "c16": (16, 16, 0.85, workload(CHUNKED_FILES, CHUNKED_FILE_S), chunked, LATENCY_MS),
        # The service, not this machine, is the limit: what adapting itself costs.
        "c3-1s": (3, None, 0.8, workload(), {}, 1000),
    }
    rows = []
    with scratch_dir("medasr-throttle-home-") as home:
        for name, (capacity, concurrency, target, source, env, latency_ms) in scenarios.items():
            if options.only and name not in options.only:
                continue
            for reference in (True, False):
                row = run_row(
                    source,
                    capacity=capacity,
                    concurrency=concurrency,
                    target=target,
                    home=home,
                    reference=reference,
                    extra_env=env,
                    latency_ms=latency_ms,
                )
                rows.append(row)
                print(table(rows[-1:]), flush=True)
    section = report(rows, label=options.label)
    print(section)
    if options.write_readme:
        write_readme(section, label=options.label)


if __name__ == "__main__":
    main()
