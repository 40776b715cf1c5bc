"""Ward recordings with long quiet stretches: room noise at about -54 dBFS with a little
50 Hz hum, and tone dictation placed anywhere in it (numpy, then ffmpeg for mp3/m4a)."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import soundfile

from devserver.tone import encode_tone_dictation
from tasks.audio import find_ffmpeg

SR = 16_000
NOISE_DBFS = -54.0
HUM_DBFS = -60.0


def room_noise(seconds: float, *, seed: int) -> np.ndarray:
    """Float samples of white noise plus 50/150 Hz hum, about -54 dBFS RMS in all."""
    count = round(seconds * SR)
    rng = np.random.default_rng(seed)
    noise = rng.standard_normal(count, dtype=np.float32) * np.float32(10 ** (NOISE_DBFS / 20))
    t = np.arange(count, dtype=np.float32) / np.float32(SR)
    hum_amplitude = np.float32(10 ** (HUM_DBFS / 20) * np.sqrt(2))
    hum = hum_amplitude * (
        np.sin(2 * np.pi * 50 * t) + np.float32(0.3) * np.sin(6 * np.pi * 50 * t)
    )
    return noise + hum


def tone_speech(text: str, *, gain_db: float = 0.0) -> np.ndarray:
    """`text` as tone dictation, float samples, `gain_db` relative to the encoder's level."""
    samples = encode_tone_dictation(text, sample_rate_hz=SR).astype(np.float32) / 32768
    return samples * np.float32(10 ** (gain_db / 20))


def place(
    parts: Sequence[tuple[float, np.ndarray | None]], *, total_s: float, seed: int
) -> np.ndarray:
    """Room noise `total_s` long with each (start_s, speech) added at its start."""
    signal = room_noise(total_s, seed=seed)
    for start_s, speech in parts:
        if speech is None:
            continue
        start = round(start_s * SR)
        signal[start : start + len(speech)] += speech[: len(signal) - start]
    return signal


def write_recording(path: Path, signal: np.ndarray) -> Path:
    """Write `signal` as wav, or as mp3 / m4a (through a temporary WAV) by its suffix."""
    clipped = np.clip(signal, -1, 1)
    if path.suffix == ".wav":
        soundfile.write(path, clipped, SR, subtype="PCM_16")
        return path
    source = path.with_suffix(".source.wav")
    soundfile.write(source, clipped, SR, subtype="PCM_16")
    codec = (
        ["-c:a", "libmp3lame", "-b:a", "48k"]
        if path.suffix == ".mp3"
        else ["-c:a", "aac", "-b:a", "48k"]
    )
    subprocess.run(
        [
            find_ffmpeg(),
            "-nostdin",
            "-loglevel",
            "error",
            "-y",
            "-i",
            str(source),
            *codec,
            str(path),
        ],
        check=True,
    )
    source.unlink()
    return path
