"""Audio fixtures, all generated here (tone dictation, speech-like bursts, noise, hum) and
encoded with the bundled ffmpeg; session-scoped so each is made once per run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile

from devserver.tone import encode_tone_dictation
from tests.helpers.audio import (
    SR,
    Bursts,
    Dictation,
    add_noise_and_hum,
    dictation_text,
    ffmpeg,
    ffmpeg_process,
    speechlike,
)


@pytest.fixture(scope="session")
def audio_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("audio")


@pytest.fixture(scope="session")
def dictation(audio_dir: Path) -> Dictation:
    """About 6 minutes of tone dictation with noise (25 dB SNR) and hum: a 22.05 kHz stereo
    WAV, a 64 kbps mp3 of it, and mono AAC m4a files with the index at the end and at the
    start (encoded in parallel: these encoders are the slowest part of the suite's setup)."""
    text = dictation_text(words=480)
    clean = encode_tone_dictation(text, sample_rate_hz=22_050).astype(np.float32) / 32768
    noisy = add_noise_and_hum(clean, sample_rate_hz=22_050, snr_db=25)
    wav = audio_dir / "dictation.wav"
    soundfile.write(wav, np.stack([noisy, noisy], axis=1), 22_050, subtype="PCM_16")
    mp3, m4a, fast = (audio_dir / n for n in ("dictation.mp3", "dictation.m4a", "fast.m4a"))
    encoders = [
        ffmpeg_process("-i", str(wav), "-c:a", "libmp3lame", "-b:a", "64k", str(mp3)),
        ffmpeg_process("-i", str(wav), "-ac", "1", "-c:a", "aac", "-b:a", "48k", str(m4a)),
    ]
    assert all(p.wait() == 0 for p in encoders)
    ffmpeg("-i", str(m4a), "-c", "copy", "-movflags", "+faststart", str(fast))
    return Dictation(text, wav, mp3, m4a, fast)


@pytest.fixture(scope="session")
def bursts(audio_dir: Path) -> Bursts:
    """Two minutes of speech-like bursts and pauses of random length, noise and hum."""
    rng = np.random.default_rng(11)
    parts: list[np.ndarray] = []
    pauses: list[tuple[int, int]] = []
    position = 0
    while position < 120 * SR:
        burst = speechlike(rng.uniform(0.4, 2.5), rng=rng)
        gap = np.zeros(round(rng.choice([0.08, 0.15, 0.2]) * SR if rng.random() < 0.4
                             else rng.uniform(0.3, 1.6) * SR))  # fmt: skip
        parts += [burst, gap]
        position += len(burst)
        pauses.append((position, position + len(gap)))
        position += len(gap)
    signal = add_noise_and_hum(np.concatenate(parts), sample_rate_hz=SR, snr_db=30)
    path = audio_dir / "bursts.wav"
    soundfile.write(path, signal, SR, subtype="PCM_16")
    return Bursts(path, pauses, len(signal))
