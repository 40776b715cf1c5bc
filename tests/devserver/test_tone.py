"""The tone-dictation codec survives resampling, lossy codecs, noise, hum and any level."""

from __future__ import annotations

import io
import subprocess
import time
from pathlib import Path

import imageio_ffmpeg
import numpy as np
import pytest
import soundfile

from devserver.tone import (
    ALPHABET,
    SENTENCE_GAP_MS,
    WORD_GAP_MS,
    decode_tone_dictation,
    decode_wav_bytes,
    encode_to_wav_bytes,
    encode_tone_dictation,
)

TEXT = (
    "The patient, a 45-year-old male, presents with chest pain. "
    "BP 120/80; HR 72 (regular). O'Neil's 5% dose? yes! plan: ecg."
)
EXPECTED = " ".join(TEXT.lower().split())
FFMPEG = imageio_ffmpeg.get_ffmpeg_exe()


def _ffmpeg_round_trip(
    samples: np.ndarray, *, sample_rate_hz: int, suffix: str, codec_args: list[str], tmp: Path
) -> np.ndarray:
    """Encode int16 samples to a file with ffmpeg, decode it back to 16 kHz mono int16."""
    src = tmp / "src.wav"
    soundfile.write(src, samples, sample_rate_hz, subtype="PCM_16")
    out = tmp / f"enc{suffix}"
    base = [FFMPEG, "-nostdin", "-hide_banner", "-loglevel", "error", "-y"]
    subprocess.run([*base, "-i", str(src), *codec_args, str(out)], check=True)
    pcm = subprocess.run(
        [*base, "-i", str(out), "-ac", "1", "-ar", "16000", "-f", "s16le", "-"],
        check=True,
        capture_output=True,
    ).stdout
    return np.frombuffer(pcm, dtype=np.int16)


@pytest.mark.parametrize("sample_rate_hz", [8000, 16000, 44100, 48000])
def test_clean_round_trip(sample_rate_hz: int) -> None:
    samples = encode_tone_dictation(TEXT, sample_rate_hz=sample_rate_hz)
    assert samples.dtype == np.int16
    assert decode_tone_dictation(samples, sample_rate_hz=sample_rate_hz) == EXPECTED


def test_every_symbol_of_the_alphabet() -> None:
    text = " ".join(ALPHABET[i : i + 7] for i in range(0, len(ALPHABET), 7))
    samples = encode_tone_dictation(text)
    assert decode_tone_dictation(samples, sample_rate_hz=16000) == text


@pytest.mark.parametrize(
    ("suffix", "codec_args"),
    [
        pytest.param(".wav", ["-ar", "16000"], id="resample-44k1-to-16k"),
        pytest.param(".mp3", ["-c:a", "libmp3lame", "-b:a", "64k"], id="mp3-64k"),
        pytest.param(".mp3", ["-c:a", "libmp3lame", "-b:a", "32k"], id="mp3-32k"),
        pytest.param(".m4a", ["-c:a", "aac", "-b:a", "64k"], id="m4a-aac-64k"),
        pytest.param(".ogg", ["-c:a", "libopus", "-b:a", "32k"], id="opus-32k"),
    ],
)
def test_survives_ffmpeg_round_trip(suffix: str, codec_args: list[str], tmp_path: Path) -> None:
    samples = encode_tone_dictation(TEXT, sample_rate_hz=44100)
    decoded = _ffmpeg_round_trip(
        samples, sample_rate_hz=44100, suffix=suffix, codec_args=codec_args, tmp=tmp_path
    )
    assert decode_tone_dictation(decoded, sample_rate_hz=16000) == EXPECTED


@pytest.mark.parametrize("snr_db", [20, 10])
def test_survives_noise_and_hum(snr_db: int) -> None:
    rng = np.random.default_rng(7)
    clean = encode_tone_dictation(TEXT).astype(np.float64) / 32768
    noise_rms = np.sqrt(np.mean(clean**2) / 10 ** (snr_db / 10))
    t = np.arange(len(clean)) / 16000
    hum = 0.05 * np.sin(2 * np.pi * 50 * t) + 0.02 * np.sin(2 * np.pi * 150 * t)
    noisy = clean + rng.normal(0, noise_rms, len(clean)) + hum
    assert decode_tone_dictation(noisy.astype(np.float32), sample_rate_hz=16000) == EXPECTED


@pytest.mark.parametrize("gain", [0.002, 0.03, 0.5, 1.0], ids=lambda g: f"gain-{g}")
def test_level_independent(gain: float) -> None:
    scaled = encode_tone_dictation(TEXT).astype(np.float64) * gain
    assert decode_tone_dictation(scaled.astype(np.int16), sample_rate_hz=16000) == EXPECTED


def _pause_middles(samples: np.ndarray, *, min_gap_ms: int) -> list[int]:
    """Sample index of the middle of every all-zero run at least `min_gap_ms` long."""
    zero = np.concatenate([[0], (samples == 0).astype(np.int8), [0]])
    edges = np.diff(zero)
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    long = (ends - starts) >= min_gap_ms * 16
    return [int((s + e) // 2) for s, e in zip(starts[long], ends[long], strict=True)]


def test_pieces_cut_in_pauses_decode_to_their_words() -> None:
    samples = encode_tone_dictation(TEXT)
    cuts = _pause_middles(samples, min_gap_ms=WORD_GAP_MS - 10)
    assert len(cuts) == len(EXPECTED.split()) - 1
    pieces = np.split(samples, cuts[::3])
    decoded = [decode_tone_dictation(p, sample_rate_hz=16000) for p in pieces]
    assert " ".join(decoded) == EXPECTED
    assert all(decoded)


def test_piece_starting_and_ending_exactly_at_pause_edges() -> None:
    samples = encode_tone_dictation("alpha beta gamma")
    nonzero = np.flatnonzero(samples)
    tight = samples[nonzero[0] : nonzero[-1] + 1]
    assert decode_tone_dictation(tight, sample_rate_hz=16000) == "alpha beta gamma"
    sentence_gap = np.zeros(SENTENCE_GAP_MS * 16, dtype=np.int16)
    padded = np.concatenate([sentence_gap, tight, sentence_gap])
    assert decode_tone_dictation(padded, sample_rate_hz=16000) == "alpha beta gamma"


@pytest.mark.parametrize(
    "samples",
    [
        pytest.param(np.zeros(32000, dtype=np.int16), id="digital-silence"),
        pytest.param(np.zeros(10, dtype=np.int16), id="shorter-than-a-frame"),
        pytest.param(
            (np.random.default_rng(1).normal(0, 3000, 48000)).astype(np.int16), id="noise-only"
        ),
        pytest.param(
            (8000 * np.sin(2 * np.pi * 50 * np.arange(48000) / 16000)).astype(np.int16),
            id="hum-only",
        ),
        pytest.param(
            (8000 * np.sin(2 * np.pi * 440 * np.arange(48000) / 16000)).astype(np.int16),
            id="lone-440-hz-sine",
        ),
        pytest.param(
            (
                5000 * np.sin(2 * np.pi * 420 * np.arange(48000) / 16000)
                + 5000 * np.sin(2 * np.pi * 1320 * np.arange(48000) / 16000)
            ).astype(np.int16),
            id="steady-chord-of-symbol-a",
        ),
    ],
)
def test_no_symbols_decode_to_empty_text(samples: np.ndarray) -> None:
    assert decode_tone_dictation(samples, sample_rate_hz=16000) == ""


def test_empty_text_is_silence() -> None:
    samples = encode_tone_dictation("   ")
    assert not samples.any()
    assert decode_tone_dictation(samples, sample_rate_hz=16000) == ""


def test_unknown_character_is_refused() -> None:
    with pytest.raises(ValueError, match="cannot encode"):
        encode_tone_dictation("naïve")


@pytest.mark.parametrize("channels", [1, 2])
def test_wav_bytes_round_trip(channels: int) -> None:
    wav = encode_to_wav_bytes(TEXT, sample_rate_hz=22050, channels=channels)
    info = soundfile.info(io.BytesIO(wav))
    assert (info.samplerate, info.channels, info.subtype) == (22050, channels, "PCM_16")
    assert wav[:4] == b"RIFF"
    assert decode_wav_bytes(wav) == EXPECTED


def test_decoding_ten_minutes_is_fast() -> None:
    one = encode_tone_dictation(TEXT)
    repeats = 1 + 600 * 16000 // len(one)
    long = np.tile(one, repeats)
    # CPU time of this process, not wall time: a busy machine delays it, never adds to it.
    start = time.process_time()
    decoded = decode_tone_dictation(long, sample_rate_hz=16000)
    cpu_s = time.process_time() - start
    assert decoded == " ".join([EXPECTED] * repeats)
    assert cpu_s < 4.0
