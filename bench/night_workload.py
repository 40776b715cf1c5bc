"""The night benchmark's recordings: ~15 s tone dictations in wav, mp3, m4a, FLAC and Opus.

Made once by the bundled ffmpeg into bench/out/night/ (gitignored), every file a
different dictation (its own words and noise seed), cycling through the formats a
hospital's recorders leave behind: mono and stereo, 8 to 48 kHz; a third of them (5 of
every 15) what handheld and desk recorders write: 24-bit/44.1 kHz stereo, 16-bit/48 kHz
stereo and 32-bit float WAV, FLAC and Opus. A run over N files
uses bench/out/night-N/, hard links to the first N, so every N shares one generation.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from pipeline_workloads import OUT, dictation

from tasks.audio import find_ffmpeg

SECONDS = 15.0
# (container, sample rate Hz, channels, encoder arguments)
VARIANTS = (
    ("wav", 16_000, 1, ["-c:a", "pcm_s16le"]),
    ("mp3", 44_100, 2, ["-c:a", "libmp3lame", "-b:a", "128k"]),
    ("m4a", 22_050, 2, ["-c:a", "aac", "-b:a", "64k"]),
    ("wav", 8_000, 1, ["-c:a", "pcm_s16le"]),
    ("mp3", 22_050, 1, ["-c:a", "libmp3lame", "-b:a", "64k"]),
    ("m4a", 44_100, 1, ["-c:a", "aac", "-b:a", "96k"]),
    ("wav", 44_100, 2, ["-c:a", "pcm_s16le"]),
    ("wav", 16_000, 1, ["-c:a", "pcm_s16le"]),
    ("mp3", 44_100, 2, ["-c:a", "libmp3lame", "-b:a", "128k"]),
    ("m4a", 22_050, 2, ["-c:a", "aac", "-b:a", "64k"]),
    # What recorders write (a third of the files): ffmpeg's WAV muxer writes the 24-bit
    # and float ones as WAVE_FORMAT_EXTENSIBLE, as many recorders do.
    ("wav", 44_100, 2, ["-c:a", "pcm_s24le"]),
    ("wav", 48_000, 2, ["-c:a", "pcm_s16le"]),
    ("wav", 48_000, 1, ["-c:a", "pcm_f32le"]),
    ("flac", 44_100, 1, ["-c:a", "flac"]),
    ("opus", 48_000, 1, ["-c:a", "libopus", "-b:a", "32k"]),
)
RECIPE_VERSION = 2


def _encode(index: int, folder: Path) -> None:
    container, rate_hz, channels, codec = VARIANTS[index % len(VARIANTS)]
    samples = dictation(4_000_000 + index, seconds=SECONDS, sample_rate_hz=rate_hz)
    if channels == 2:
        samples = np.stack([samples, (samples * 0.9).astype(np.int16)], axis=1)
    target = folder / f"night-{index:05d}.{container}"
    command = [
        find_ffmpeg(), "-nostdin", "-loglevel", "error", "-y", "-f", "s16le",
        "-ar", str(rate_hz), "-ac", str(channels), "-i", "pipe:0", *codec, str(target),
    ]  # fmt: skip
    subprocess.run(command, input=samples.tobytes(), check=True)


def all_recordings(count: int) -> Path:
    """bench/out/night/ with at least `count` recordings (generated on first use)."""
    folder = OUT / "night"
    marker = OUT / "night.json"
    recipe = {"seconds": SECONDS, "variants": len(VARIANTS), "version": RECIPE_VERSION}
    have = json.loads(marker.read_text()) if marker.exists() else {}
    if have.get("recipe") != recipe:
        shutil.rmtree(folder, ignore_errors=True)
        have = {"recipe": recipe, "files": 0}
    folder.mkdir(parents=True, exist_ok=True)
    if have["files"] < count:
        print(f"generating bench/out/night ({have['files']} -> {count} files) ...", flush=True)
        with ThreadPoolExecutor(max_workers=2) as pool:
            list(pool.map(lambda i: _encode(i, folder), range(have["files"], count)))
        marker.write_text(json.dumps({"recipe": recipe, "files": count}))
    return folder


def recordings(count: int) -> Path:
    """bench/out/night-COUNT/: hard links to the first `count` recordings."""
    source = all_recordings(count)
    folder = OUT / f"night-{count}"
    names = sorted(p.name for p in source.iterdir())[:count]
    if folder.is_dir() and sorted(p.name for p in folder.iterdir()) == names:
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    for name in names:
        os.link(source / name, folder / name)
    return folder
