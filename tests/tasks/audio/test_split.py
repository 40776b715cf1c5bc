"""Splitting: sample-exact, under the cap, never inside a word, in the longest pause."""

from __future__ import annotations

import io
import itertools
import math
from pathlib import Path

import numpy as np
import pytest
import soundfile

from devserver.tone import decode_wav_bytes
from tasks.audio import WAV_HEADER_BYTES, Chunk, is_all_silent, iter_chunks
from tasks.audio.pauses import FRAME_SAMPLES, WINDOW_SHARE
from tasks.errors import SilentAudio
from tests.helpers.audio import (
    SR,
    Bursts,
    Dictation,
    assert_close_to_reference,
    reference_pcm,
    speechlike,
)


def _pcm(chunk: Chunk) -> np.ndarray:
    return np.frombuffer(chunk.wav[WAV_HEADER_BYTES:], dtype=np.int16)


def _check_chunk_shape(chunks: list[Chunk], *, max_bytes: int, total_samples: int) -> None:
    """1-based contiguous indices and offsets, valid WAV headers, every chunk under the cap."""
    assert [c.index for c in chunks] == list(range(1, len(chunks) + 1))
    assert chunks[0].start_sample == 0
    assert chunks[-1].end_sample == total_samples
    for before, after in itertools.pairwise(chunks):
        assert before.end_sample == after.start_sample
        assert before.end_ms == after.start_ms
    for chunk in chunks:
        assert len(chunk.wav) <= max_bytes
        assert len(_pcm(chunk)) == chunk.end_sample - chunk.start_sample
        assert chunk.start_ms == chunk.start_sample // 16
        assert chunk.end_ms == chunk.end_sample // 16
        info = soundfile.info(io.BytesIO(chunk.wav))
        assert (info.samplerate, info.channels, info.subtype) == (SR, 1, "PCM_16")


@pytest.mark.parametrize("kind", ["mp3", "m4a", "m4a_faststart", "wav"])
def test_concatenation_equals_reference_decode(dictation: Dictation, kind: str) -> None:
    path: Path = getattr(dictation, kind)
    chunks = list(iter_chunks(path, max_bytes=1_000_000))
    reference = reference_pcm(path)
    assert len(chunks) > 5
    pcm = np.concatenate([_pcm(c) for c in chunks])
    if kind == "wav":  # 22.05 kHz stereo: resampled in medasr's process, not ffmpeg's
        _check_chunk_shape(chunks, max_bytes=1_000_000, total_samples=len(pcm))
        assert_close_to_reference(pcm, path)
    else:
        _check_chunk_shape(chunks, max_bytes=1_000_000, total_samples=len(reference))
        assert np.array_equal(pcm, reference)


@pytest.mark.parametrize(
    ("kind", "max_bytes"),
    [
        ("mp3", 500_000),
        ("mp3", 1_000_000),
        ("mp3", 2_000_000),
        ("mp3", 5_000_000),
        ("m4a", 2_000_000),
        ("m4a_faststart", 5_000_000),
    ],
    ids=lambda v: f"{v:_}" if isinstance(v, int) else v,
)
def test_no_word_is_cut(dictation: Dictation, kind: str, max_bytes: int) -> None:
    chunks = list(iter_chunks(getattr(dictation, kind), max_bytes=max_bytes))
    assert len(chunks) >= 3  # the dictation needs several chunks at every cap
    assert all(len(c.wav) <= max_bytes for c in chunks)
    assert not any(c.silent for c in chunks)
    texts = [decode_wav_bytes(c.wav) for c in chunks]
    assert all(texts)
    assert " ".join(texts) == dictation.text


def test_splitting_is_deterministic(dictation: Dictation) -> None:
    first = [(c.start_sample, c.end_sample) for c in iter_chunks(dictation.m4a, max_bytes=700_000)]
    again = [(c.start_sample, c.end_sample) for c in iter_chunks(dictation.m4a, max_bytes=700_000)]
    assert first == again


@pytest.mark.parametrize("max_bytes", [400_000, 1_000_000], ids=["400k", "1M"])
def test_cut_is_in_the_middle_of_the_longest_pause(bursts: Bursts, max_bytes: int) -> None:
    chunks = list(iter_chunks(bursts.path, max_bytes=max_bytes))
    _check_chunk_shape(chunks, max_bytes=max_bytes, total_samples=bursts.samples)
    cap = (max_bytes - WAV_HEADER_BYTES) // 2
    slack = 3 * FRAME_SAMPLES  # frame grid and the bursts' 10 ms ramps
    with_pause = 0
    for chunk in chunks[:-1]:
        window = (
            chunk.start_sample + math.ceil((1 - WINDOW_SHARE) * cap),
            chunk.start_sample + cap,
        )
        clipped = [
            (max(a, window[0]), min(b, window[1]))
            for a, b in bursts.pauses
            if min(b, window[1]) - max(a, window[0]) >= 0.25 * SR
        ]
        if not clipped:  # no pause in this window: the quietest frame is in a short gap
            assert any(a <= chunk.end_sample <= b for a, b in bursts.pauses)
            continue
        with_pause += 1
        longest = max(b - a for a, b in clipped)
        near_longest = [(a, b) for a, b in clipped if b - a >= longest - 2 * slack]
        assert any(abs(chunk.end_sample - (a + b) // 2) <= slack for a, b in near_longest), (
            chunk.index,
            chunk.end_sample,
            near_longest,
        )
    assert with_pause >= len(chunks) // 2


def test_without_a_pause_the_cut_is_at_the_quietest_frame(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    signal = speechlike(40.0, rng=rng)
    dips = [(int(s * SR), int(s * SR) + 1600) for s in np.arange(1.5, 39, 1.7)]
    depths = rng.permutation(np.linspace(0.05, 0.5, len(dips)))
    for (a, b), depth in zip(dips, depths, strict=True):
        signal[a:b] *= depth  # 100 ms dips: far shorter than a 250 ms pause
    path = tmp_path / "no-pause.wav"
    soundfile.write(path, signal, SR, subtype="PCM_16")
    max_bytes = 500_000
    cap = (max_bytes - WAV_HEADER_BYTES) // 2
    chunks = list(iter_chunks(path, max_bytes=max_bytes))
    assert len(chunks) >= 3
    for chunk in chunks[:-1]:
        lo = chunk.start_sample + math.ceil((1 - WINDOW_SHARE) * cap)
        inside = [
            (depth, a, b)
            for (a, b), depth in zip(dips, depths, strict=True)
            if a >= lo and b <= chunk.start_sample + cap
        ]
        _, a, b = min(inside)
        assert a <= chunk.end_sample <= b


def test_silent_stretch_is_marked_and_not_the_rest(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    speech = np.concatenate([np.concatenate([speechlike(1.2, rng=rng), np.zeros(8000)])] * 14)
    background = np.zeros(60 * SR)
    signal = np.concatenate([speech, background, speech])
    signal += rng.normal(0, 0.001, len(signal))  # noise floor, about -60 dBFS
    path = tmp_path / "gap.wav"
    soundfile.write(path, signal, SR, subtype="PCM_16")
    chunks = list(iter_chunks(path, max_bytes=500_000))
    flags = [c.silent for c in chunks]
    assert flags[0] is False
    assert flags[-1] is False
    assert sum(flags) >= 2
    speech_end, speech_start = len(speech), len(speech) + len(background)
    for chunk in chunks:
        if chunk.silent:
            assert chunk.start_sample >= speech_end - SR
            assert chunk.end_sample <= speech_start + SR
    assert not is_all_silent(chunks)


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda rng: np.zeros(30 * SR), id="digital-zero"),
        pytest.param(lambda rng: rng.normal(0, 0.003, 30 * SR), id="hiss"),
        pytest.param(
            lambda rng: (
                rng.normal(0, 0.002, 30 * SR)
                + 0.02 * np.sin(2 * np.pi * 50 * np.arange(30 * SR) / SR)
            ),
            id="hiss-and-hum",
        ),
    ],
)
def test_all_silent_recording_raises_after_its_silent_chunks(tmp_path: Path, make) -> None:
    path = tmp_path / "silence.wav"
    soundfile.write(path, make(np.random.default_rng(1)), SR, subtype="PCM_16")
    seen: list[Chunk] = []
    with pytest.raises(SilentAudio) as caught:
        seen.extend(iter_chunks(path, max_bytes=500_000))
    assert caught.value.kind == "silent_audio"
    assert str(path) in str(caught.value)
    assert "silent" in str(caught.value)
    assert seen
    assert is_all_silent(seen)


@pytest.mark.parametrize("samples", [0, 1, 16_000, 16_001, 480_000])
def test_a_chunks_wav_is_byte_for_byte_what_libsndfile_writes(samples: int) -> None:
    # Chunk WAVs are written by the standard library's `wave` (a tenth of the CPU); the
    # service must get the same file as when soundfile wrote them.
    from tasks.audio.splitter import _wav_bytes

    pcm = np.random.default_rng(samples).integers(-32768, 32768, samples, dtype=np.int16)
    reference = io.BytesIO()
    soundfile.write(reference, pcm, SR, format="WAV", subtype="PCM_16")

    assert _wav_bytes(pcm) == reference.getvalue()
