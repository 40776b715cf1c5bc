"""An Ogg (Opus, Vorbis) file cut short says so: its duration is read from its last page,
so a cut file looks whole to ffmpeg and would be done with its tail lost without a word."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from devserver.tone import decode_wav_bytes
from tasks.audio import Chunk, DecoderPool, iter_chunks
from tasks.errors import DamagedTail
from tests.flows.prefect_server import MEDASR
from tests.helpers.damaged_tail import TEXT, assert_readable_prefix
from tests.helpers.recordings_ogg import CODECS, cut_at_page, cut_mid_page, encoded

CAP_BYTES = 20 * 32_000 + 44


@pytest.fixture(scope="module")
def decoders() -> Iterator[DecoderPool]:
    pool = DecoderPool(max_processes=1)
    yield pool
    pool.close()


@pytest.mark.parametrize("cut", [cut_mid_page, cut_at_page], ids=["mid-page", "at-a-page"])
@pytest.mark.parametrize("suffix", sorted(CODECS))
@pytest.mark.parametrize("pooled", [False, True], ids=["ffmpeg", "worker"])
def test_a_cut_ogg_file_yields_its_readable_part_then_says_where_it_ends(
    tmp_path: Path, suffix: str, cut: object, pooled: bool, decoders: DecoderPool
) -> None:
    path = cut(encoded(tmp_path, suffix), keep_share=0.6)  # type: ignore[operator]
    chunks: list[Chunk] = []

    with pytest.raises(DamagedTail) as caught:
        chunks.extend(iter_chunks(path, max_bytes=CAP_BYTES, decoders=decoders if pooled else None))

    assert chunks
    assert caught.value.damaged_at_ms == chunks[-1].end_ms
    assert "truncated audio file" in caught.value.reason
    text = " ".join(decode_wav_bytes(c.wav) for c in chunks if not c.silent)
    assert_readable_prefix(text, full=TEXT)


@pytest.mark.parametrize("suffix", sorted(CODECS))
def test_a_whole_ogg_file_is_read_to_its_end(tmp_path: Path, suffix: str) -> None:
    chunks = list(iter_chunks(encoded(tmp_path, suffix), max_bytes=CAP_BYTES))

    assert " ".join(decode_wav_bytes(c.wav) for c in chunks if not c.silent) == TEXT


def test_medasr_split_of_a_cut_opus_file_exits_1_naming_the_cut(tmp_path: Path) -> None:
    path = cut_mid_page(encoded(tmp_path, "opus"), keep_share=0.6)
    out = tmp_path / "chunks"

    done = subprocess.run(
        [MEDASR, "split", str(path), "--out", str(out)], capture_output=True, text=True, timeout=120
    )

    assert done.returncode == 1, done.stdout
    assert f"medasr: truncated audio file: {path}" in done.stderr
    assert "Traceback" not in done.stderr
    assert not list(out.glob("chunk-*.wav"))
