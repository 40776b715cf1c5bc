"""Inputs: WAV of every common sample format, rate and channel count; compressed formats;
m4a with its index at the end, read from a path."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
import soundfile

from devserver.tone import decode_wav_bytes, encode_tone_dictation
from tasks.audio import WAV_HEADER_BYTES, find_ffmpeg, iter_chunks, probe_audio
from tasks.errors import CorruptAudio
from tests.helpers.audio import (
    Dictation,
    add_noise_and_hum,
    assert_close_to_reference,
    ffmpeg,
    reference_pcm,
)
from tests.helpers.dss import dss_bytes, dss_frames_for, dss_seconds, write_dss

TEXT = "wav variants decode to the same 16 khz mono text, 100% of it."


def _pcm(path: Path, *, max_bytes: int = 500_000) -> tuple[np.ndarray, str]:
    chunks = list(iter_chunks(path, max_bytes=max_bytes))
    assert all(len(c.wav) <= max_bytes for c in chunks)
    pcm = np.concatenate([np.frombuffer(c.wav[WAV_HEADER_BYTES:], dtype=np.int16) for c in chunks])
    return pcm, " ".join(decode_wav_bytes(c.wav) for c in chunks)


@pytest.mark.parametrize(
    ("subtype", "codec", "rate_hz", "channels"),
    [
        ("PCM_U8", "pcm_u8", 8000, 1),
        ("PCM_16", "pcm_s16le", 16000, 1),
        ("PCM_16", "pcm_s16le", 44100, 2),
        ("PCM_24", "pcm_s24le", 48000, 2),
        ("PCM_24", "pcm_s24le", 96000, 1),
        ("PCM_32", "pcm_s32le", 22050, 6),
        ("FLOAT", "pcm_f32le", 32000, 2),
        ("FLOAT", "pcm_f32le", 96000, 6),
        ("DOUBLE", "pcm_f64le", 11025, 1),
    ],
    ids=lambda v: str(v),
)
def test_wav_variants(
    tmp_path: Path, subtype: str, codec: str, rate_hz: int, channels: int
) -> None:
    mono = encode_tone_dictation(TEXT, sample_rate_hz=rate_hz).astype(np.float32) / 32768
    frames = np.repeat(
        add_noise_and_hum(mono, sample_rate_hz=rate_hz, snr_db=30)[:, None], channels, 1
    )
    path = tmp_path / "in.wav"
    soundfile.write(path, frames * 0.8, rate_hz, subtype=subtype)
    info = probe_audio(path)
    assert (info.sample_rate_hz, info.channels, info.codec, info.container) == (
        rate_hz,
        channels,
        codec,
        "wav",
    )
    assert info.duration_ms == pytest.approx(len(mono) * 1000 / rate_hz, abs=30)
    pcm, text = _pcm(path)
    if channels <= 2 and (rate_hz, channels) != (16000, 1):  # resampled in medasr's process
        assert_close_to_reference(pcm, path)
    else:
        assert np.array_equal(pcm, reference_pcm(path))
    assert text == TEXT


@pytest.mark.parametrize(
    ("suffix", "args", "codec"),
    [
        pytest.param(".flac", ["-c:a", "flac"], "flac", id="flac"),
        pytest.param(".ogg", ["-c:a", "libvorbis"], "vorbis", id="ogg-vorbis"),
        pytest.param(".opus", ["-c:a", "libopus", "-b:a", "32k"], "opus", id="ogg-opus"),
        pytest.param(".webm", ["-c:a", "libopus", "-b:a", "32k"], "opus", id="webm-opus"),
        pytest.param(".aac", ["-c:a", "aac", "-b:a", "64k", "-f", "adts"], "aac", id="adts-aac"),
        pytest.param(
            ".amr",
            ["-ar", "8000", "-c:a", "libopencore_amrnb", "-b:a", "12.2k"],
            "amr_nb",
            id="amr",
        ),
        pytest.param(".mp3", ["-c:a", "libmp3lame", "-q:a", "5"], "mp3", id="mp3-vbr"),
    ],
)
def test_other_formats(tmp_path: Path, suffix: str, args: list[str], codec: str) -> None:
    source = tmp_path / "src.wav"
    samples = encode_tone_dictation(TEXT, sample_rate_hz=48_000)
    soundfile.write(source, samples, 48_000, subtype="PCM_16")
    path = tmp_path / f"in{suffix}"
    ffmpeg("-i", str(source), "-ac", "1", *args, str(path))
    assert probe_audio(path).codec == codec
    pcm, text = _pcm(path)
    assert np.array_equal(pcm, reference_pcm(path))
    if codec != "amr_nb":  # a speech codec at 12.2 kbps is not meant to carry tones
        assert text == TEXT
    assert abs(len(pcm) - len(samples) / 3) < 0.1 * 16_000


@pytest.mark.parametrize("kind", ["m4a", "m4a_faststart"])
def test_m4a_decodes_to_full_duration_from_a_path(dictation: Dictation, kind: str) -> None:
    path: Path = getattr(dictation, kind)
    info = probe_audio(path)
    assert info.container is not None
    assert "m4a" in info.container
    assert info.codec == "aac"
    chunks = list(iter_chunks(path, max_bytes=5_000_000))
    assert chunks[-1].end_ms == pytest.approx(info.duration_ms, abs=100)
    assert chunks[-1].end_ms > 300_000


def test_m4a_with_index_at_the_end_is_why_we_read_paths(dictation: Dictation) -> None:
    """The trap itself: the same file through a pipe yields (almost) nothing."""
    with dictation.m4a.open("rb") as source:
        piped = subprocess.run(
            [find_ffmpeg(), "-nostdin", "-v", "quiet", "-i", "pipe:0", "-ac", "1", "-ar",
             "16000", "-f", "s16le", "-"],
            stdin=source,
            capture_output=True,
        ).stdout  # fmt: skip
    assert len(piped) < 32_000  # under one second of the six minutes


def test_a_dss_dictation_decodes_to_the_length_written(tmp_path: Path) -> None:
    path = write_dss(tmp_path / "dr smith.dss", seconds=3.0, seed=1)
    info = probe_audio(path)
    assert (info.container, info.codec, info.sample_rate_hz, info.channels) == (
        "dss",
        "dss_sp",
        11_025,
        1,
    )
    chunks = list(iter_chunks(path, max_bytes=64_000))  # 2 s chunks: the file is split
    samples = sum(len(c.wav) - WAV_HEADER_BYTES for c in chunks) // 2
    written_s = dss_seconds(frames=dss_frames_for(seconds=3.0))
    assert len(chunks) == 2
    assert samples == pytest.approx(written_s * 16_000, abs=16)  # a millisecond


def test_a_dss_cut_inside_its_header_is_damaged_audio_not_an_unknown_format(
    tmp_path: Path,
) -> None:
    path = tmp_path / "cut.dss"
    path.write_bytes(dss_bytes(seconds=3.0)[:700])  # the header is 1,024 bytes
    with pytest.raises(CorruptAudio, match="damaged or truncated audio file"):
        probe_audio(path)
