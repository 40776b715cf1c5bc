"""RIFF/WAVE, read and written in one place: the chunk walk and the 44-byte header.

`wave_chunks` walks the chunks of a WAV's first bytes (sniff.py looks for the data chunk
to catch a file cut short, native_wav.py for its format and samples); `wav_header` is
the header of every WAV medasr writes (the splitter's chunks, the workstation's audio).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

WAV_HEADER_BYTES = 44
_PCM = 1


@dataclass(frozen=True)
class RiffChunk:
    """One chunk of a RIFF file: its id, where its payload starts, its declared size."""

    chunk_id: bytes
    offset: int  # of the payload's first byte
    size_bytes: int  # as declared: may be a placeholder or run past the bytes at hand


def is_wave(head: bytes) -> bool:
    """True when the first bytes are a RIFF/WAVE header."""
    return len(head) >= 12 and head[:4] == b"RIFF" and head[8:12] == b"WAVE"


def wave_chunks(head: bytes) -> Iterator[RiffChunk]:
    """The chunks of the RIFF/WAVE file whose first bytes are `head`, in order, as far as
    `head` reaches (a chunk's header, not its payload, must lie within it); none for any
    other file."""
    if not is_wave(head):
        return
    offset = 12
    while offset + 8 <= len(head):
        (size,) = struct.unpack_from("<I", head, offset + 4)
        yield RiffChunk(head[offset : offset + 4], offset + 8, size)
        offset += 8 + size + (size & 1)  # an odd-sized chunk is followed by a pad byte


def wav_header(*, data_bytes: int, rate_hz: int, channels: int = 1, bits: int = 16) -> bytes:
    """The 44-byte header of a PCM WAV holding `data_bytes` bytes of samples (what the
    standard library's `wave` and libsndfile write)."""
    block_align = channels * bits // 8
    fmt = struct.pack("<HHIIHH", _PCM, channels, rate_hz, rate_hz * block_align, block_align, bits)
    riff_bytes = 4 + 8 + len(fmt) + 8 + data_bytes
    chunks = struct.pack("<4s4sI", b"WAVE", b"fmt ", len(fmt)) + fmt
    return (
        b"RIFF" + struct.pack("<I", riff_bytes) + chunks + b"data" + struct.pack("<I", data_bytes)
    )
