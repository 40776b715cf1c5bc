"""Dictation-like audio, ffmpeg for tests, and the child processes a decode leaves."""

from __future__ import annotations

import os
import random
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tasks.audio import find_ffmpeg

SR = 16_000
# fmt: off
VOCAB = [
    "patient", "presents", "with", "chest", "pain", "since", "2", "days", "bp", "120/80", "hr",
    "72", "regular", "rhythm", "no", "murmur", "ecg", "shows", "sinus", "tachycardia", "plan",
    "aspirin", "325mg", "stat", "troponin", "repeat", "in", "6", "hours", "follow-up",
    "o'neil", "5%", "dextrose", "history", "of", "type-2", "diabetes", "on", "metformin",
    "500mg", "bd",
]
# fmt: on


def path_without_ffmpeg() -> str:
    """This PATH less the folders holding an `ffmpeg`: a lookup must use imageio-ffmpeg's."""
    folders = os.environ.get("PATH", "").split(os.pathsep)
    return os.pathsep.join(f for f in folders if f and not (Path(f) / "ffmpeg").exists())


def no_ffmpeg(*args: object, **kwargs: object) -> None:
    """Put in place of the ffmpeg decoder where a file must be decoded without it."""
    raise AssertionError("an ffmpeg process was started")


def ffmpeg(*args: str) -> None:
    """Run the bundled ffmpeg quietly; raise on failure."""
    subprocess.run(
        [find_ffmpeg(), "-nostdin", "-hide_banner", "-loglevel", "error", "-y", *args],
        check=True,
    )


def ffmpeg_process(*args: str) -> subprocess.Popen[bytes]:
    """Start the bundled ffmpeg quietly; the caller waits."""
    return subprocess.Popen(
        [find_ffmpeg(), "-nostdin", "-hide_banner", "-loglevel", "error", "-y", *args]
    )


def reference_pcm(path: Path) -> np.ndarray:
    """The file decoded by a plain ffmpeg command to 16 kHz mono s16: the oracle."""
    pcm = subprocess.run(
        [find_ffmpeg(), "-nostdin", "-v", "error", "-i", str(path), "-ac", "1", "-ar", "16000",
         "-f", "s16le", "-"],
        check=True,
        capture_output=True,
    ).stdout  # fmt: skip
    return np.frombuffer(pcm, dtype=np.int16)


# medasr resamples 16-bit WAVs itself (soxr); ffmpeg's resampler agrees to ~55-65 dB.
RESAMPLED_MIN_SNR_DB = 40.0


def assert_close_to_reference(pcm: np.ndarray, path: Path) -> None:
    """`pcm` is ffmpeg's decode of `path` (reference_pcm): the same length within a
    sample and an error at least RESAMPLED_MIN_SNR_DB below the signal."""
    reference = reference_pcm(path).astype(np.float64)
    assert abs(len(pcm) - len(reference)) <= 1
    count = min(len(pcm), len(reference))
    error = reference[:count] - pcm[:count]
    snr_db = 10 * np.log10(np.sum(reference[:count] ** 2) / max(float(np.sum(error**2)), 1e-9))
    assert snr_db >= RESAMPLED_MIN_SNR_DB, snr_db


def dictation_text(*, words: int, seed: int = 3) -> str:
    """Deterministic medical-sounding sentences of about `words` words."""
    rng = random.Random(seed)
    out: list[str] = []
    while len(out) < words:
        sentence = [rng.choice(VOCAB) for _ in range(rng.randint(4, 12))]
        sentence[-1] += "."
        out += sentence
    return " ".join(out)


def add_noise_and_hum(
    signal: np.ndarray, *, sample_rate_hz: int, snr_db: float, seed: int = 5
) -> np.ndarray:
    """Float signal plus white noise at `snr_db` below its active level and 50 Hz hum."""
    rng = np.random.default_rng(seed)
    active = signal[np.abs(signal) > 1e-4]
    level = float(np.sqrt(np.mean(active**2))) if len(active) else 0.1
    t = np.arange(len(signal), dtype=np.float32) / np.float32(sample_rate_hz)
    noise = rng.standard_normal(len(signal), dtype=np.float32) * np.float32(
        level / 10 ** (snr_db / 20)
    )
    hum = 0.01 * np.sin(2 * np.pi * 50 * t) + 0.004 * np.sin(2 * np.pi * 150 * t)
    return signal + noise + hum


def speechlike(duration_s: float, *, rng: np.random.Generator) -> np.ndarray:
    """A burst of band-limited noise with a 4 Hz syllable envelope, RMS about -18 dBFS."""
    n = round(duration_s * SR)
    noise = rng.normal(0, 1, n + 8)
    voiced = np.convolve(noise, np.ones(8) / 8, mode="valid")[:n]  # soft low-pass
    t = np.arange(n) / SR
    envelope = 0.65 + 0.35 * np.sin(2 * np.pi * 4 * t + rng.uniform(0, 6.28))
    ramp = np.minimum(1, np.minimum(t, t[::-1]) / 0.01)
    out = voiced * envelope * ramp
    return 0.125 * out / float(np.sqrt(np.mean(out**2)) or 1)


@dataclass(frozen=True)
class Dictation:
    text: str
    wav: Path
    mp3: Path
    m4a: Path
    m4a_faststart: Path


@dataclass(frozen=True)
class Bursts:
    """Speech-like bursts at 16 kHz; `pauses` are (start, end) sample ranges of silence."""

    path: Path
    pauses: list[tuple[int, int]]
    samples: int


def children_pids() -> set[int]:
    """Pids of this process's children, zombies included (from /proc, no psutil)."""
    pids: set[int] = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        text = (task / "children").read_text()
        pids.update(int(p) for p in text.split())
    return pids


def process_state(pid: int) -> str | None:
    """The state letter of /proc/PID/stat ('Z' for a zombie); None once the pid is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return stat.rsplit(")", 1)[1].split()[0]  # the name before it may hold spaces or ')'


def assert_no_child_left(before: set[int]) -> None:
    """No child started since `before` remains, running or zombie; no child is a zombie."""
    after = children_pids()
    assert after - before == set(), {pid: process_state(pid) for pid in after - before}
    assert [pid for pid in after if process_state(pid) == "Z"] == []
