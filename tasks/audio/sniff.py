"""A look at a file's first bytes: text or audio, and is a WAV header honest about its size;
a look at an Ogg file's last bytes: does it end with its end-of-stream page.

Used only to word an error well (ffmpeg says "Invalid data" for text, noise and a
truncated m4a alike) and to catch a WAV or an Ogg file cut short, which ffmpeg decodes
silently (an Ogg file's duration is read from its last page: a cut file looks whole).
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


OGG_TAIL_BYTES = 2 * (27 + 255 + 255 * 255)  # two of the largest pages an Ogg file can hold
_OGG_END_OF_STREAM = 0x04  # header type flag of a logical stream's last page


def _ogg_crc_table() -> tuple[int, ...]:
    """The Ogg CRC-32's table (polynomial 0x04C11DB7, not reflected)."""
    table = []
    for byte in range(256):
        crc = byte << 24
        for _ in range(8):
            crc = (crc << 1) ^ 0x04C11DB7 if crc & 0x80000000 else crc << 1
        table.append(crc & 0xFFFFFFFF)
    return tuple(table)


_OGG_CRC_TABLE = _ogg_crc_table()


def _is_whole_ogg_page(page: bytes) -> bool:
    """True when `page` is exactly one Ogg page whose checksum matches."""
    crc = 0
    for byte in page[:22] + bytes(4) + page[26:]:  # the checksum is taken with its field zero
        crc = ((crc << 8) & 0xFFFFFFFF) ^ _OGG_CRC_TABLE[(crc >> 24) ^ byte]
    return crc == int.from_bytes(page[22:26], "little")


def _ogg_page_end(tail: bytes, start: int) -> int | None:
    """Where the Ogg page starting at `start` would end; None when its header is not whole."""
    if start + 27 > len(tail) or tail[start + 4] != 0:  # version 0 is the only one
        return None
    segments = tail[start + 26]
    if start + 27 + segments > len(tail):
        return None
    return start + 27 + segments + sum(tail[start + 27 : start + 27 + segments])


def ogg_cut_short(tail: bytes) -> str | None:
    """Why the Ogg file whose last bytes are `tail` (OGG_TAIL_BYTES, or all of a smaller
    file) is cut short, or None: its last whole page (checksum checked) must end the
    file, or be followed by anything but the start of another page, and end the stream."""
    start = tail.rfind(b"OggS")
    while start >= 0:
        end = _ogg_page_end(tail, start)
        if end is not None and end <= len(tail) and _is_whole_ogg_page(tail[start:end]):
            if tail.startswith(b"OggS", end):
                return "its last Ogg page is cut off: the copy or the recording stopped part-way"
            if not tail[start + 5] & _OGG_END_OF_STREAM:
                return "it ends without the Ogg end-of-stream page: cut short, or never finished"
            return None
        start = tail.rfind(b"OggS", 0, start)
    return None  # no whole page at all: ffmpeg's own error says what is wrong
