"""WAVs already at 16 kHz mono s16le are read without ffmpeg, sample for sample as ffmpeg would."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
import soundfile

from devserver.tone import encode_tone_dictation
from tasks.audio import iter_chunks
from tasks.audio.decoder import PcmDecoder
from tasks.audio.native_wav import NativeWavReader, native_data_chunk, open_pcm_source
from tasks.errors import CorruptAudio, EmptyAudio
from tests.helpers.audio import reference_pcm
from tests.helpers.native_wav import TEXT, pcm_of, raw_wav


def _samples() -> np.ndarray:
    return encode_tone_dictation(TEXT, sample_rate_hz=16_000)


def _chunk(chunk_id: bytes, payload: bytes) -> bytes:
    """A RIFF chunk with its pad byte."""
    return chunk_id + struct.pack("<I", len(payload)) + payload + b"\x00" * (len(payload) % 2)


# What recorders append after the samples: an INFO list (odd-sized title) and an ID3 tag.
TRAILER = _chunk(b"LIST", b"INFO" + _chunk(b"INAM", b"ward round 7")) + _chunk(
    b"id3 ", b"ID3\x04\x00" + bytes(40) + b"x"
)


@pytest.mark.parametrize(
    "writer",
    [
        pytest.param(lambda p, s: soundfile.write(p, s, 16_000, subtype="PCM_16"), id="plain"),
        pytest.param(
            lambda p, s: soundfile.write(p, s, 16_000, subtype="PCM_16", format="WAVEX"),
            id="extensible",
        ),
        pytest.param(
            lambda p, s: p.write_bytes(
                raw_wav(s, extra_chunk=b"LIST" + struct.pack("<I", 5) + b"abcde\x00")
            ),
            id="list-chunk-odd-size",
        ),
        pytest.param(
            lambda p, s: p.write_bytes(raw_wav(s, declared=0xFFFFFFFF)), id="placeholder-size"
        ),
    ],
)
def test_native_wav_is_read_directly_and_equals_ffmpeg(tmp_path: Path, writer) -> None:
    path = tmp_path / "native.wav"
    writer(path, _samples())
    info, exact, source = open_pcm_source(path, timeout_s=60, probe_timeout_s=60)
    source.close()
    assert isinstance(source, NativeWavReader)
    assert exact
    assert info.duration_ms == len(_samples()) * 1000 // 16_000
    pcm, text = pcm_of(path)
    assert np.array_equal(pcm, reference_pcm(path))
    assert np.array_equal(pcm, _samples())
    assert text == TEXT


@pytest.mark.parametrize(
    ("rate_hz", "channels", "subtype"),
    [(16_000, 3, "PCM_16"), (192_000, 1, "PCM_16"), (16_000, 1, "ALAW"), (16_000, 1, "IMA_ADPCM")],
    ids=["3-channels", "192k", "a-law", "adpcm"],
)
def test_other_wavs_go_through_ffmpeg(
    tmp_path: Path, rate_hz: int, channels: int, subtype: str
) -> None:
    path = tmp_path / "other.wav"
    mono = encode_tone_dictation(TEXT, sample_rate_hz=rate_hz)
    soundfile.write(path, np.repeat(mono[:, None], channels, axis=1), rate_hz, subtype=subtype)
    _, _, source = open_pcm_source(path, timeout_s=60, probe_timeout_s=60)
    source.close()
    assert isinstance(source, PcmDecoder)
    assert np.array_equal(pcm_of(path)[0], reference_pcm(path))


def test_a_trailing_odd_byte_is_not_half_a_sample(tmp_path: Path) -> None:
    path = tmp_path / "odd.wav"
    raw = raw_wav(_samples(), declared=0xFFFFFFFF) + b"\x01"
    path.write_bytes(raw)
    data = native_data_chunk(raw[:65536], size_bytes=len(raw))
    assert data is not None
    assert data.size_bytes == 2 * len(_samples())
    assert np.array_equal(pcm_of(path)[0], _samples())


@pytest.mark.parametrize(
    ("make", "error", "words"),
    [
        (lambda s: raw_wav(s)[: 44 + len(s)], CorruptAudio, "truncated"),
        (lambda s: raw_wav(s[:0]), EmptyAudio, "no samples"),
    ],
    ids=["cut-short", "no-samples"],
)
def test_broken_native_wavs_keep_their_errors(tmp_path: Path, make, error, words: str) -> None:
    path = tmp_path / "broken.wav"
    path.write_bytes(make(_samples()))
    with pytest.raises(error, match=words):
        list(iter_chunks(path, max_bytes=200_000))


@pytest.mark.parametrize("declared", [0, 0xFFFFFFFF, None], ids=["zero", "ffffffff", "exact"])
def test_chunks_after_the_samples_are_not_read_as_samples(tmp_path: Path, declared) -> None:
    """With a placeholder data size the samples end where trailing chunks begin; the result
    equals ffmpeg's decode of the same samples with an honest header (ffmpeg itself would
    turn the trailer into a burst of noise)."""
    path = tmp_path / "streamed.wav"
    path.write_bytes(raw_wav(_samples(), declared=declared, trailer=TRAILER))
    honest = tmp_path / "honest.wav"
    honest.write_bytes(raw_wav(_samples()))
    info, _, source = open_pcm_source(path, timeout_s=60, probe_timeout_s=60)
    source.close()
    assert isinstance(source, NativeWavReader)
    assert info.duration_ms == len(_samples()) * 1000 // 16_000
    pcm, text = pcm_of(path)
    assert np.array_equal(pcm, reference_pcm(honest))
    assert np.array_equal(pcm, _samples())
    assert text == TEXT


@pytest.mark.parametrize("declared", [0, 0xFFFFFFFF], ids=["zero", "ffffffff"])
def test_placeholder_size_without_a_trailer_reads_to_the_end_like_ffmpeg(
    tmp_path: Path, declared: int
) -> None:
    path = tmp_path / "streamed.wav"
    path.write_bytes(raw_wav(_samples(), declared=declared))
    pcm, _ = pcm_of(path)
    assert np.array_equal(pcm, reference_pcm(path))
    assert np.array_equal(pcm, _samples())


def test_samples_that_look_like_a_chunk_id_are_kept(tmp_path: Path) -> None:
    """Sample bytes spelling "LIST" are samples unless a chunk chain ends at the file's end."""
    samples = np.concatenate([_samples(), np.frombuffer(b"LIST\x08\x00\x00\x00", "<i2")])
    samples = np.concatenate([samples, np.full(100, 7, dtype=np.int16)])
    path = tmp_path / "lookalike.wav"
    path.write_bytes(raw_wav(samples, declared=0xFFFFFFFF))
    pcm, _ = pcm_of(path)
    assert np.array_equal(pcm, samples)
    assert np.array_equal(pcm, reference_pcm(path))
