"""Olympus/Philips DSS files (Digital Speech Standard, SP mode) written from scratch.

The bundled ffmpeg decodes DSS but has no DSS muxer, so a test that needs a real `.dss`
builds one here, laid out as libavformat's `dss` demuxer reads it:

- a header of `version` 512-byte blocks (version 2: 1,024 bytes) starting `\\x02dss`, with
  the author at 0x0c, the recording's start and end times (`YYMMDDhhmmss`) at 0x26 and
  0x32, the codec byte at 0x2a4 (0: DSS SP, 11,025 Hz mono) and a comment at 0x31e;
- then 512-byte audio blocks, each a 6-byte block header and 506 bytes of frames. DSS SP
  frames are 42 bytes stored alternately whole and as 40 (the demuxer rebuilds the pair's
  shared bytes), so they run across block boundaries; each frame is 264 samples.

The frames' bits are a deterministic pseudo-random payload: the decoder accepts any, and
they decode to noise-like audio of the length written (not silence, not a tone text).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Final

SAMPLE_RATE_HZ: Final = 11_025
SAMPLES_PER_FRAME: Final = 264
_BLOCK_BYTES: Final = 512
_BLOCK_HEADER_BYTES: Final = 6
_HEADER_BLOCKS: Final = 2
_FRAME_BYTES: Final = 42  # the odd frames are stored as 40
_AUTHOR_AT, _AUTHOR_BYTES = 0x0C, 16
_START_TIME_AT, _END_TIME_AT = 0x26, 0x32
_CODEC_AT, _CODEC_DSS_SP = 0x2A4, 0x00
_COMMENT_AT, _COMMENT_BYTES = 0x31E, 64


def dss_frames_for(*, seconds: float) -> int:
    """How many DSS SP frames hold `seconds` of audio."""
    return round(seconds * SAMPLE_RATE_HZ / SAMPLES_PER_FRAME)


def dss_seconds(*, frames: int) -> float:
    """The duration `frames` DSS SP frames decode to."""
    return frames * SAMPLES_PER_FRAME / SAMPLE_RATE_HZ


def dss_bytes(*, seconds: float, seed: int = 0, author: str = "medasr-test") -> bytes:
    """A DSS SP file of about `seconds` (a whole number of frames), the same for a `seed`."""
    header = bytearray(_HEADER_BLOCKS * _BLOCK_BYTES)
    header[0:4] = bytes([_HEADER_BLOCKS]) + b"dss"
    header[_AUTHOR_AT : _AUTHOR_AT + _AUTHOR_BYTES] = author.encode("ascii")[:16].ljust(16, b"\0")
    header[_START_TIME_AT : _START_TIME_AT + 12] = b"260101090000"
    header[_END_TIME_AT : _END_TIME_AT + 12] = b"260101090500"
    header[_CODEC_AT] = _CODEC_DSS_SP
    header[_COMMENT_AT : _COMMENT_AT + _COMMENT_BYTES] = bytes(_COMMENT_BYTES)
    return bytes(header) + _audio_blocks(_frame_stream(dss_frames_for(seconds=seconds), seed=seed))


def write_dss(path: Path, *, seconds: float, seed: int = 0) -> Path:
    """`dss_bytes` written to `path` (folders made); returns `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(dss_bytes(seconds=seconds, seed=seed))
    return path


def _frame_stream(frames: int, *, seed: int) -> bytes:
    """The frames as stored: 42 bytes, then 40, in turn."""
    rng = random.Random(seed)
    stream = bytearray()
    for index in range(frames):
        if index % 2:
            stream += rng.randbytes(_FRAME_BYTES - 2)
            continue
        frame = bytearray(rng.randbytes(_FRAME_BYTES))
        # Byte 0 is never 0xff (older demuxers stop there) and byte 40, which the next
        # frame borrows, stays below 0x80 (a negative one reads as "not known yet").
        frame[0] &= 0x7F
        frame[_FRAME_BYTES - 2] &= 0x7F
        stream += frame
    return bytes(stream)


def _audio_blocks(stream: bytes) -> bytes:
    """`stream` cut into blocks of 506 bytes behind a 6-byte block header each. The last
    block stops where the frames do: padding would decode as more frames."""
    payload = _BLOCK_BYTES - _BLOCK_HEADER_BYTES
    blocks = bytearray()
    for start in range(0, len(stream), payload):
        blocks += bytes(_BLOCK_HEADER_BYTES) + stream[start : start + payload]
    return bytes(blocks)
