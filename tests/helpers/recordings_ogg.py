"""Ogg recordings (Opus, Vorbis) of the damaged-tail text, whole or cut short."""

from __future__ import annotations

from pathlib import Path

import soundfile

from devserver.tone import encode_tone_dictation
from tests.helpers.audio import ffmpeg
from tests.helpers.damaged_tail import TEXT

CODECS = {"opus": ("-c:a", "libopus", "-b:a", "32k"), "ogg": ("-c:a", "libvorbis")}


def encoded(tmp_path: Path, suffix: str) -> Path:
    """TEXT as tone dictation (about 65 s) in an Ogg file of `suffix`."""
    source = tmp_path / "source.wav"
    soundfile.write(source, encode_tone_dictation(TEXT, sample_rate_hz=48_000), 48_000)
    full = tmp_path / f"full.{suffix}"
    ffmpeg("-i", str(source), *CODECS[suffix], str(full))
    return full


def cut_mid_page(full: Path, *, keep_share: float) -> Path:
    """`full`'s first `keep_share` of bytes: a copy stopped part-way through a page."""
    data = full.read_bytes()
    cut = full.with_name(f"cut{full.suffix}")
    cut.write_bytes(data[: round(len(data) * keep_share)])
    return cut


def cut_at_page(full: Path, *, keep_share: float) -> Path:
    """`full` up to the page start nearest below `keep_share` of its bytes: every page
    whole, the end-of-stream page missing (a recorder that never finished)."""
    data = full.read_bytes()
    cut = full.with_name(f"cut{full.suffix}")
    cut.write_bytes(data[: data.rfind(b"OggS", 0, round(len(data) * keep_share))])
    return cut
