"""Workloads of the pipeline benchmark, generated once into bench/out/ (gitignored).

* short/: 2,000 recordings of 15 s, half 44.1 kHz stereo mp3 (128 kbps), half 16 kHz
  mono wav; every file a different tone dictation (different words, noise seed), so no
  two share a sha256 and the pipeline cannot reuse one transcript for another.
* long/: 20 recordings of 20 minutes, 44.1 kHz stereo mp3 (8 chunks each at 5 MB).
* two-hours/: one 2-hour mp3 (six of the long recordings joined without re-encoding).
* noop/: 10,000 quarter-second wavs (the "already done" backlog of the no-op rerun).

A marker file per folder records the recipe, so a changed recipe regenerates.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import soundfile

from devserver.tone import encode_tone_dictation
from tasks.audio import find_ffmpeg

OUT = Path(__file__).resolve().parent / "out"
SHORT_FILES = 2_000
SHORT_S = 15
LONG_FILES = 20
LONG_S = 20 * 60
TWO_HOURS_PARTS = 6
NOOP_FILES = 10_000
NOOP_MS = 250
MP3_RATE_HZ = 44_100
WAV_RATE_HZ = 16_000
# fmt: off
WORDS = ("patient", "presents", "with", "mild", "chest", "pain", "no", "fever", "blood",
         "pressure", "normal", "heart", "rate", "regular", "lungs", "clear", "abdomen", "soft",
         "history", "of", "diabetes", "prescribed", "metformin", "twice", "daily.", "follow",
         "up", "in", "two", "weeks.", "ecg", "shows", "sinus", "rhythm.", "120/80", "325mg")
# fmt: on


def dictation(seed: int, *, seconds: float, sample_rate_hz: int) -> np.ndarray:
    """`seconds` of tone dictation (int16 mono) with words and noise drawn from `seed`."""
    rng = np.random.default_rng(seed)
    wanted = round(seconds * sample_rate_hz)
    pieces, have = [], 0
    while have < wanted:  # about 1 s of audio per word
        words = " ".join(rng.choice(WORDS, size=max(8, int(seconds / 4))))
        piece = encode_tone_dictation(words, sample_rate_hz=sample_rate_hz)
        pieces.append(piece)
        have += len(piece)
    signal = np.concatenate(pieces)[:wanted].astype(np.float32)
    signal += rng.normal(0.0, 60.0, size=wanted).astype(np.float32)  # a quiet room
    return np.clip(signal, -32768, 32767).astype(np.int16)


def encode_mp3(samples: np.ndarray, target: Path, *, sample_rate_hz: int) -> None:
    """Write `samples` (mono int16) as a stereo 128 kbps mp3 through the bundled ffmpeg."""
    stereo = np.stack([samples, (samples * 0.9).astype(np.int16)], axis=1)
    command = [
        find_ffmpeg(), "-nostdin", "-loglevel", "error", "-y", "-f", "s16le",
        "-ar", str(sample_rate_hz), "-ac", "2", "-i", "pipe:0",
        "-c:a", "libmp3lame", "-b:a", "128k", str(target),
    ]  # fmt: skip
    subprocess.run(command, input=stereo.tobytes(), check=True)


def _short_file(index: int, folder: Path) -> None:
    seed = 1_000_000 + index
    if index % 2 == 0:
        samples = dictation(seed, seconds=SHORT_S, sample_rate_hz=MP3_RATE_HZ)
        encode_mp3(samples, folder / f"dict-{index:05d}.mp3", sample_rate_hz=MP3_RATE_HZ)
    else:
        samples = dictation(seed, seconds=SHORT_S, sample_rate_hz=WAV_RATE_HZ)
        soundfile.write(folder / f"dict-{index:05d}.wav", samples, WAV_RATE_HZ, subtype="PCM_16")


def _long_file(index: int, folder: Path) -> None:
    samples = dictation(2_000_000 + index, seconds=LONG_S, sample_rate_hz=MP3_RATE_HZ)
    encode_mp3(samples, folder / f"long-{index:02d}.mp3", sample_rate_hz=MP3_RATE_HZ)


def _noop_file(index: int, folder: Path) -> None:
    rng = np.random.default_rng(3_000_000 + index)
    samples = rng.normal(0, 1000, size=WAV_RATE_HZ * NOOP_MS // 1000).astype(np.int16)
    sub = folder / f"{index // 1000:02d}"
    soundfile.write(sub / f"note-{index:05d}.wav", samples, WAV_RATE_HZ, subtype="PCM_16")


def _build(name: str, recipe: Mapping[str, object], make: Callable[[Path], None]) -> Path:
    """The folder bench/out/NAME, (re)made by `make` unless its recipe marker matches."""
    folder = OUT / name
    marker = OUT / f"{name}.json"
    if folder.is_dir() and marker.exists() and json.loads(marker.read_text()) == recipe:
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    marker.unlink(missing_ok=True)
    folder.mkdir(parents=True)
    print(f"generating bench/out/{name} ...", flush=True)
    make(folder)
    marker.write_text(json.dumps(recipe))
    return folder


def _parallel(action: Callable[[int, Path], None], count: int, folder: Path, workers: int) -> None:
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for future in [pool.submit(action, i, folder) for i in range(count)]:
            future.result()


def short_workload(workers: int = 2) -> Path:
    """The 2,000 x 15 s folder."""
    recipe = {"files": SHORT_FILES, "seconds": SHORT_S, "version": 1}
    return _build("short", recipe, lambda d: _parallel(_short_file, SHORT_FILES, d, workers))


def long_workload(workers: int = 2) -> Path:
    """The 20 x 20 min folder."""
    recipe = {"files": LONG_FILES, "seconds": LONG_S, "version": 1}
    return _build("long", recipe, lambda d: _parallel(_long_file, LONG_FILES, d, workers))


def two_hour_workload() -> Path:
    """A folder holding one 2-hour mp3."""
    parts = sorted(long_workload().glob("*.mp3"))[:TWO_HOURS_PARTS]

    def make(folder: Path) -> None:
        listing = folder.parent / "two-hours-list.txt"
        listing.write_text("".join(f"file '{p}'\n" for p in parts))
        command = [
            find_ffmpeg(), "-nostdin", "-loglevel", "fatal", "-y", "-f", "concat", "-safe", "0",
            "-i", str(listing), "-c", "copy", str(folder / "two-hours.mp3"),
        ]  # fmt: skip
        subprocess.run(command, check=True)
        listing.unlink()

    return _build("two-hours", {"parts": len(parts), "seconds": LONG_S, "version": 1}, make)


def noop_workload() -> Path:
    """The 10,000 tiny files, in ten folders of 1,000."""

    def make(folder: Path) -> None:
        for sub in range(NOOP_FILES // 1000):
            (folder / f"{sub:02d}").mkdir()
        _parallel(_noop_file, NOOP_FILES, folder, 2)

    return _build("noop", {"files": NOOP_FILES, "ms": NOOP_MS, "version": 1}, make)


def files_under(folder: Path, suffixes: Iterable[str] = (".mp3", ".wav")) -> list[Path]:
    """Audio files below `folder`, sorted."""
    wanted = tuple(suffixes)
    return sorted(p for p in folder.rglob("*") if p.suffix in wanted)


if __name__ == "__main__":
    for build in (short_workload, long_workload, two_hour_workload, noop_workload):
        print(build(), flush=True)
