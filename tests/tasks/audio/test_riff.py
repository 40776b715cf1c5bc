"""One RIFF/WAVE chunk walk and one WAV header for every reader and writer in medasr."""

from __future__ import annotations

import io
import struct
import wave

import numpy as np
import pytest
import soundfile

from tasks.audio.riff import WAV_HEADER_BYTES, wav_header, wave_chunks
from tasks.audio.splitter import WAV_HEADER_BYTES as SPLITTER_HEADER_BYTES
from web.audio_stream import wav_header as workstation_wav_header


@pytest.mark.parametrize(("rate_hz", "channels", "samples"), [(16_000, 1, 0), (16_000, 1, 801),
                                                              (44_100, 2, 10)])  # fmt: skip
def test_the_header_is_the_standard_librarys(rate_hz: int, channels: int, samples: int) -> None:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(channels)
        out.setsampwidth(2)
        out.setframerate(rate_hz)
        out.writeframes(bytes(2 * channels * samples))
    header = wav_header(data_bytes=2 * channels * samples, rate_hz=rate_hz, channels=channels)
    assert buffer.getvalue()[:WAV_HEADER_BYTES] == header
    assert SPLITTER_HEADER_BYTES == WAV_HEADER_BYTES == len(header)
    if (rate_hz, channels) == (16_000, 1):
        assert workstation_wav_header(samples) == header


def test_the_walk_finds_every_chunk_past_odd_sizes(tmp_path) -> None:
    path = tmp_path / "x.wav"
    soundfile.write(path, np.zeros(100, dtype=np.int16), 16_000, subtype="PCM_16")
    raw = path.read_bytes()
    fmt_end = raw.index(b"data")
    odd = b"LIST" + struct.pack("<I", 5) + b"abcde\x00"  # its pad byte follows
    head = raw[:fmt_end] + odd + raw[fmt_end:]
    found = [(c.chunk_id, c.size_bytes) for c in wave_chunks(head)]
    assert found == [(b"fmt ", 16), (b"LIST", 5), (b"data", 200)]
    assert head[list(wave_chunks(head))[-1].offset :] == bytes(200)
    assert list(wave_chunks(b"RIFF\x00\x00\x00\x00AVI LIST")) == []
