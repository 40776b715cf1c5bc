"""Issue 20: a recorder that never closed its file leaves a data size of ~4 GiB
(0xFFFFFFF0, 0xFFFFFFFF less the header): ffmpeg decodes all that is there, so do we."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from devserver.tone import encode_tone_dictation
from tasks.audio import iter_chunks
from tasks.audio.native_wav import NativeWavReader, open_pcm_source
from tasks.errors import CorruptAudio
from tests.helpers.audio import reference_pcm
from tests.helpers.native_wav import TEXT, pcm_of, raw_wav

# The file (4,294,967,280 bytes), and 0xFFFFFFFF less a 44-byte header.
UNCLOSED = [0xFFFFFFF0, 0xFFFFFFFF - 36, 0xFFFF0000]


@pytest.mark.parametrize("declared", UNCLOSED, ids=hex)
def test_a_native_wav_never_closed_is_read_to_its_end(tmp_path: Path, declared: int) -> None:
    samples = encode_tone_dictation(TEXT, sample_rate_hz=16_000)
    path = tmp_path / "unclosed.wav"
    path.write_bytes(raw_wav(samples, declared=declared))
    info, exact, source = open_pcm_source(path, timeout_s=60, probe_timeout_s=60)
    source.close()
    assert isinstance(source, NativeWavReader)
    assert (exact, info.duration_ms) == (True, len(samples) * 1000 // 16_000)
    pcm, text = pcm_of(path)
    assert np.array_equal(pcm, samples)
    assert np.array_equal(pcm, reference_pcm(path))
    assert text == TEXT


def _stereo_wav_declaring(samples: np.ndarray, *, declared: int) -> bytes:
    """A 16 kHz stereo WAV (so ffmpeg decodes it) whose data size says `declared`."""
    data = np.repeat(samples[:, None], 2, axis=1).astype("<i2").tobytes()
    fmt = struct.pack("<HHIIHH", 1, 2, 16_000, 64_000, 4, 16)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt
    body += b"data" + struct.pack("<I", declared) + data
    return b"RIFF" + struct.pack("<I", 0xFFFFFFFF) + body


@pytest.mark.parametrize("declared", UNCLOSED[:2], ids=hex)
def test_an_unclosed_wav_for_ffmpeg_is_decoded_whole(tmp_path: Path, declared: int) -> None:
    samples = encode_tone_dictation(TEXT, sample_rate_hz=16_000)
    path = tmp_path / "unclosed-stereo.wav"
    path.write_bytes(_stereo_wav_declaring(samples, declared=declared))
    pcm, text = pcm_of(path)
    assert text == TEXT
    assert len(pcm) == len(samples)


def test_a_wav_cut_short_is_still_truncated(tmp_path: Path) -> None:
    samples = encode_tone_dictation(TEXT, sample_rate_hz=16_000)
    path = tmp_path / "cut.wav"
    path.write_bytes(raw_wav(samples, declared=2 * len(samples) + 1_000_000))
    with pytest.raises(CorruptAudio, match="truncated"):
        list(iter_chunks(path, max_bytes=200_000))
