"""Recordings whose tail is cut off, and what must still be read of them."""

from __future__ import annotations

from pathlib import Path

import soundfile

from devserver.tone import encode_tone_dictation
from tests.helpers.audio import ffmpeg

TEXT = " ".join(["patient seen on the ward. chest clear."] * 12)  # about 65 s
CODECS = {
    "flac": ("-c:a", "flac"),
    "mp3": ("-c:a", "libmp3lame", "-b:a", "64k"),
    "m4a": ("-c:a", "aac", "-b:a", "64k", "-movflags", "+faststart"),
}


def truncated(tmp_path: Path, suffix: str, *, keep_share: float = 0.6) -> Path:
    """TEXT as tone dictation encoded to `suffix`, then cut to `keep_share` of its bytes."""
    source = tmp_path / "source.wav"
    soundfile.write(source, encode_tone_dictation(TEXT, sample_rate_hz=44_100), 44_100)
    full = tmp_path / f"full.{suffix}"
    ffmpeg("-i", str(source), *CODECS[suffix], str(full))
    data = full.read_bytes()
    cut = tmp_path / f"cut.{suffix}"
    cut.write_bytes(data[: round(len(data) * keep_share)])
    return cut


def assert_readable_prefix(text: str, *, full: str) -> None:
    """`text` is the start of `full`, its last word possibly cut by the damage."""
    words, expected = text.split(), full.split()
    assert len(words) >= len(expected) // 2, text
    assert words[:-1] == expected[: len(words) - 1]
