"""A truncated recording yields every readable chunk, then says where the damage starts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import soundfile

from devserver.tone import decode_wav_bytes, encode_tone_dictation
from tasks.audio import Chunk, DecoderPool, iter_chunks
from tasks.errors import CorruptAudio, DamagedTail
from tests.helpers.audio import ffmpeg
from tests.helpers.damaged_tail import CODECS, TEXT, assert_readable_prefix, truncated

CAP_BYTES = 20 * 32_000 + 44


@pytest.mark.parametrize("suffix", sorted(CODECS))
def test_readable_part_is_yielded_before_the_damage(tmp_path: Path, suffix: str) -> None:
    path = truncated(tmp_path, suffix)
    chunks: list[Chunk] = []

    with pytest.raises(DamagedTail) as caught:
        chunks.extend(iter_chunks(path, max_bytes=CAP_BYTES))  # keeps what came before

    assert chunks, "nothing readable was yielded"
    assert caught.value.damaged_at_ms == chunks[-1].end_ms
    assert 30_000 <= caught.value.damaged_at_ms <= 45_000  # about 60% of 65 s
    assert caught.value.kind == "corrupt_audio"
    assert str(path) in caught.value.reason
    text = " ".join(decode_wav_bytes(c.wav) for c in chunks if not c.silent)
    assert_readable_prefix(text, full=TEXT)


def test_m4a_with_its_index_cut_off_has_nothing_readable(tmp_path: Path) -> None:
    """moov at the end (no faststart): without the index no sample can be found."""
    source = tmp_path / "source.wav"
    soundfile.write(source, encode_tone_dictation("short note.", sample_rate_hz=16_000), 16_000)
    full = tmp_path / "full.m4a"
    ffmpeg("-i", str(source), "-c:a", "aac", str(full))
    cut = tmp_path / "cut.m4a"
    cut.write_bytes(full.read_bytes()[: full.stat().st_size // 2])

    with pytest.raises(CorruptAudio) as caught:
        list(iter_chunks(cut, max_bytes=CAP_BYTES))

    assert not isinstance(caught.value, DamagedTail)


@pytest.fixture(scope="module")
def decoders() -> Iterator[DecoderPool]:
    pool = DecoderPool(max_processes=1)
    yield pool
    pool.close()


@pytest.mark.parametrize("pooled", [False, True], ids=["ffmpeg", "worker"])
@pytest.mark.parametrize("suffix", sorted(CODECS))
def test_a_tail_cut_by_a_few_percent_is_damage_too(
    tmp_path: Path, suffix: str, pooled: bool, decoders: DecoderPool
) -> None:
    """3 % of 65 s is 2 s of dictation: the header's length is read from the file (FLAC's
    sample count, the mp3's Xing frames, the m4a's index), so the loss is known."""
    path = truncated(tmp_path, suffix, keep_share=0.97)
    chunks: list[Chunk] = []

    with pytest.raises(DamagedTail) as caught:
        chunks.extend(iter_chunks(path, max_bytes=CAP_BYTES, decoders=decoders if pooled else None))

    assert caught.value.damaged_at_ms == chunks[-1].end_ms
    assert 60_000 <= caught.value.damaged_at_ms <= 65_000
