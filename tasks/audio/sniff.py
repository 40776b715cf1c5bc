"""A look at a file's first bytes: text or audio, and is a WAV header honest about its size.

Used only to word an error well (ffmpeg says "Invalid data" for text, noise and a
truncated m4a alike) and to catch a WAV cut short, which ffmpeg decodes silently.
"""

from __future__ import annotations

from pathlib import Path

from tasks.audio.riff import wave_chunks
from tasks.errors import CorruptAudio, EmptyAudio

# Sizes a recorder writes before it knows the real one (streaming writers, crashed runs).
_PLACEHOLDER_SIZES = {0, 0xFFFFFFFF, 0x7FFFFFFF, 0x7FFFF000}
# A data size this close to 4 GiB leaves no room in a RIFF file for its own header: a
# recorder that never closed the file wrote it ("0xFFFFFFFF less the header", 0xFFFFFFF0).
_UNCLOSED_MIN_SIZE = 0xFFFF0000


def is_placeholder_size(declared_bytes: int) -> bool:
    """True for a WAV data size that means "to the end of the file", not a real size."""
    return declared_bytes in _PLACEHOLDER_SIZES or declared_bytes >= _UNCLOSED_MIN_SIZE


_AUDIO_MAGIC = (
    (0, b"RIFF"),
    (0, b"RF64"),
    (0, b"ID3"),
    (0, b"fLaC"),
    (0, b"OggS"),
    (0, b"#!AMR"),
    (0, b"FORM"),
    (0, b"caff"),
    (0, b"\x1a\x45\xdf\xa3"),  # Matroska / WebM
    (0, b"\x02dss"),  # Olympus/Philips DSS (header of 2 blocks)
    (0, b"\x03dss"),  # the same, header of 3 blocks
    (4, b"ftyp"),  # MP4 / M4A / 3GP
    (4, b"mdat"),
    (4, b"moov"),
    (4, b"wide"),
    (4, b"free"),
)


def looks_like_text(head: bytes) -> bool:
    """True for bytes that read as UTF-8 text (no NUL, mostly printable)."""
    if not head or b"\x00" in head:
        return False
    text = head.decode("utf-8", errors="ignore")
    if len(text) < 0.9 * len(head.decode("latin-1")):
        return False
    printable = sum(ch.isprintable() or ch in "\t\r\n" for ch in text)
    return printable >= 0.95 * len(text)


def looks_like_audio(head: bytes) -> bool:
    """True when the first bytes carry a known audio container's signature or an MPEG sync."""
    if any(head[offset : offset + len(magic)] == magic for offset, magic in _AUDIO_MAGIC):
        return True
    # MPEG audio (mp3) and ADTS (aac) frames start with 11 set bits.
    return len(head) >= 2 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0


def _wav_data_chunk(head: bytes) -> tuple[int, int] | None:
    """(offset, declared size) of a RIFF/WAVE file's data chunk, if it is within `head`."""
    for chunk in wave_chunks(head):
        if chunk.chunk_id == b"data":
            return chunk.offset, chunk.size_bytes
    return None


def check_wav_header(head: bytes, *, size_bytes: int, path: Path) -> None:
    """For a RIFF WAV: raise EmptyAudio (no data) or CorruptAudio (cut short); else nothing."""
    found = _wav_data_chunk(head)
    if found is None:
        return
    data_offset, declared_bytes = found
    present_bytes = size_bytes - data_offset
    if present_bytes <= 0 and is_placeholder_size(declared_bytes):
        raise EmptyAudio(f"empty audio file: {path} (the WAV holds no samples)", path=str(path))
    if is_placeholder_size(declared_bytes):
        return
    if present_bytes < declared_bytes:
        raise CorruptAudio(
            f"truncated audio file: {path} (the WAV header promises {declared_bytes} bytes "
            f"of samples, the file holds {max(0, present_bytes)})",
            path=str(path),
        )
