"""Long mp3s through a libav worker (streamed) against the ffmpeg process per file.

Run from the repository root: `.venv/bin/python bench/long_decode_bench.py [--rounds 3]`.
Encodes a 44.1 kHz stereo 128 kbps tone dictation (bench/audio_bench.py's) of 30 and 60
minutes, then:

* time: the 30-minute mp3 split by `iter_chunks` (5 MB chunks) through a warm worker, then
  through an ffmpeg process (no `decoders`), then the ffmpeg command alone (`ffmpeg -threads
  1 -i IN -ac 1 -ar 16000 OUT.wav`), in turns, `--rounds` times; the least wall and CPU of
  each (CPU: this process, its reaped children, and the worker's own from /proc), and each
  over the ffmpeg command's in the same run;
* memory: the 60-minute mp3 split in a fresh child Python each way; peak resident memory
  (VmHWM) of that process and of its decoder (the worker, read before it ends; ffmpeg,
  the children's ru_maxrss).

Prints one JSON object; the figures go to bench/README.md by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import soundfile

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.audio_bench import WORDS, cpu_s, run_ffmpeg
from devserver.tone import encode_tone_dictation
from tasks.audio import DecoderPool, find_ffmpeg, iter_chunks

ROOT = Path(__file__).resolve().parents[1]
CAP_BYTES = 5_000_000

CHILD = """
import json, resource, sys
from pathlib import Path
from tasks.audio import DecoderPool, iter_chunks

def peak_mb(pid="self"):
    status = Path(f"/proc/{pid}/status").read_text()
    return int(status.split("VmHWM:")[1].split()[0]) / 1024

path, streamed = Path(sys.argv[1]), sys.argv[2] == "worker"
pool = DecoderPool(max_processes=1) if streamed else None
count = sum(1 for _ in iter_chunks(path, max_bytes=5_000_000, decoders=pool))
decoder_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
if pool is not None:
    assert pool.decoded == 1, "the worker did not decode the file"
    decoder_mb = peak_mb(pool._idle[0].process.pid)
    pool.close()
print(json.dumps({"medasr_mb": peak_mb(), "decoder_mb": decoder_mb, "chunks": count}))
"""


def make_mp3(work: Path, *, minutes: int) -> Path:
    """A 44.1 kHz stereo 128 kbps tone dictation of `minutes`."""
    text = " ".join(WORDS[i % len(WORDS)] for i in range(820))
    tone = encode_tone_dictation(text, sample_rate_hz=44_100).astype(np.float32) / 32768
    tone = np.resize(tone, 600 * 44_100)  # ten minutes, looped by ffmpeg
    noise = 0.005 * np.random.default_rng(0).standard_normal(len(tone), dtype=np.float32)
    wav = work / "ten.wav"
    if not wav.exists():
        soundfile.write(wav, np.stack([tone + noise, 0.9 * tone], axis=1), 44_100, "PCM_16")
    path = work / f"{minutes}-minutes.mp3"
    run_ffmpeg("-stream_loop", str(minutes // 10 - 1), "-i", str(wav),
               "-c:a", "libmp3lame", "-b:a", "128k", str(path))  # fmt: skip
    return path


def worker_cpu_s(pool: DecoderPool) -> float:
    """CPU seconds of the pool's idle workers so far (from /proc)."""
    total = 0.0
    for worker in pool._idle:
        fields = Path(f"/proc/{worker.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def time_paths(path: Path, work: Path, *, rounds: int) -> dict[str, float]:
    """Least wall and CPU of each way, in turns."""
    pool = DecoderPool(max_processes=1)
    command = [find_ffmpeg(), "-nostdin", "-loglevel", "error", "-y", "-threads", "1",
               "-i", str(path), "-ac", "1", "-ar", "16000", str(work / "out.wav")]  # fmt: skip
    ways = {
        "worker": lambda: sum(1 for _ in iter_chunks(path, max_bytes=CAP_BYTES, decoders=pool)),
        "ffmpeg_process": lambda: sum(1 for _ in iter_chunks(path, max_bytes=CAP_BYTES)),
        "ffmpeg_command": lambda: subprocess.run(command, check=True),
    }
    best: dict[str, float] = {}
    for _ in range(rounds):
        for name, way in ways.items():
            started, started_cpu, worker_before = time.perf_counter(), cpu_s(), worker_cpu_s(pool)
            way()
            wall = time.perf_counter() - started
            cpu = cpu_s() - started_cpu + worker_cpu_s(pool) - worker_before
            best[f"{name}_wall_s"] = min(best.get(f"{name}_wall_s", wall), wall)
            best[f"{name}_cpu_s"] = min(best.get(f"{name}_cpu_s", cpu), cpu)
    assert pool.decoded == rounds, "the worker did not decode every round"
    pool.close()
    for name in ("worker", "ffmpeg_process"):
        for unit in ("wall", "cpu"):
            ratio = best[f"{name}_{unit}_s"] / best[f"ffmpeg_command_{unit}_s"]
            best[f"{name}_{unit}_ratio"] = round(ratio, 3)
    return {key: round(value, 3) for key, value in best.items()}


def peak_memory(path: Path) -> dict[str, dict[str, float]]:
    """VmHWM of a fresh child splitting `path`, and of its decoder, each way."""
    found = {}
    for way in ("ffmpeg_process", "worker"):
        done = subprocess.run([sys.executable, "-c", CHILD, str(path), way], capture_output=True,
                              text=True, check=True, cwd=ROOT)  # fmt: skip
        found[way] = json.loads(done.stdout)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="medasr-long-") as folder:
        work = Path(folder)
        thirty, sixty = make_mp3(work, minutes=30), make_mp3(work, minutes=60)
        figures = {
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "load": os.getloadavg()[0],
            "time_30_min": time_paths(thirty, work, rounds=args.rounds),
            "peak_60_min": peak_memory(sixty),
            "load_after": os.getloadavg()[0],
        }
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
