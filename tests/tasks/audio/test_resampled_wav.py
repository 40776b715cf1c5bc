"""16-bit WAVs of another rate or two channels are decoded in this process, as ffmpeg would.

The oracle is the naive script's own command, `ffmpeg -i F -ac 1 -ar 16000`: medasr's
16 kHz mono must stay within a small fraction of a step of its samples (SNR against
ffmpeg's output well above what a speech recognizer can hear), with the same length and
the same words for the devserver's tone decoder.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile

from devserver.tone import encode_tone_dictation
from tasks.audio.native_wav import open_pcm_source
from tasks.audio.resampler import ResampledReader, _samples_of
from tasks.errors import CorruptAudio
from tests.helpers.audio import reference_pcm
from tests.helpers.native_wav import TEXT, pcm_of

MIN_SNR_DB = 40.0  # against ffmpeg's own resampler; the two agree to ~55-65 dB


def _snr_db(reference: np.ndarray, ours: np.ndarray) -> float:
    error = reference.astype(np.float64) - ours
    return float(10 * np.log10(np.sum(reference.astype(np.float64) ** 2) / np.sum(error**2)))


def _write(path: Path, *, rate_hz: int, channels: int, seconds_of_noise: float = 0.0) -> None:
    mono = encode_tone_dictation(TEXT, sample_rate_hz=rate_hz).astype(np.float64)
    noise = np.random.default_rng(7).normal(0, 300, int(seconds_of_noise * rate_hz))
    mono = np.concatenate([noise, mono])
    # The second channel differs from the first: a downmix that took one channel fails.
    frames = np.stack([mono, 0.6 * mono[::-1]], axis=1)[:, :channels]
    soundfile.write(path, np.clip(frames, -32768, 32767).astype(np.int16), rate_hz, "PCM_16")


@pytest.mark.parametrize(
    ("rate_hz", "channels"),
    [(8_000, 1), (11_025, 2), (16_000, 2), (22_050, 1), (44_100, 2), (48_000, 1)],
)
def test_pcm16_wavs_are_resampled_here_and_agree_with_ffmpeg(
    tmp_path: Path, rate_hz: int, channels: int
) -> None:
    path = tmp_path / f"dictation-{rate_hz}-{channels}.wav"
    _write(path, rate_hz=rate_hz, channels=channels, seconds_of_noise=9.0)
    info, exact, source = open_pcm_source(path, timeout_s=60, probe_timeout_s=60)
    source.close()
    assert isinstance(source, ResampledReader)  # no ffmpeg process
    assert exact
    assert (info.sample_rate_hz, info.channels) == (rate_hz, channels)
    # A small cap: several chunks, so blocks and chunk edges fall mid-stream.
    ours, text = pcm_of(path, max_bytes=100_000)
    reference = reference_pcm(path)
    assert abs(len(ours) - len(reference)) <= 1
    count = min(len(ours), len(reference))
    assert _snr_db(reference[:count], ours[:count]) >= MIN_SNR_DB
    assert info.duration_ms is not None
    assert abs(len(ours) * 1000 // 16_000 - info.duration_ms) <= 1
    if channels == 1:  # the reversed second channel is no dictation
        assert text.split() == TEXT.split()


def test_a_truncated_stereo_wav_keeps_its_error(tmp_path: Path) -> None:
    path = tmp_path / "cut.wav"
    _write(path, rate_hz=44_100, channels=2)
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 3])  # the header promises three times as much
    with pytest.raises(CorruptAudio, match="truncated"):
        pcm_of(path)


@pytest.mark.parametrize("frames", [0, 1, 2, 65_537])
def test_24_bit_samples_are_their_three_bytes_under_a_zero_byte(frames: int) -> None:
    """Every 24-bit sample, the last of a block included, is the signed 32-bit number of
    a zero byte and its three bytes (as ffmpeg's decoder widens it)."""
    extremes = bytes([0x00, 0x00, 0x80, 0xFF, 0xFF, 0x7F, 0xFF, 0xFF, 0xFF, 0x01, 0x00, 0x00])
    noise = np.random.default_rng(frames).integers(0, 256, 3 * frames, dtype=np.uint8).tobytes()
    raw = (extremes + noise)[: 3 * frames]
    expected = [
        int.from_bytes(b"\0" + raw[at : at + 3], "little", signed=True)
        for at in range(0, len(raw), 3)
    ]
    assert _samples_of(memoryview(raw), "s24").tolist() == expected
