"""WAVs already in the output format (16 kHz mono PCM s16le) are read as they are, without ffmpeg.

Decoding such a file is the identity, yet an ffmpeg probe and decode cost two process
starts (about 50 ms of CPU per file here, more than reading a 15 s recording): on a
backlog of short dictations that is the largest cost left. Anything else (another rate,
stereo, 24-bit, float, RF64, a data chunk past the first 64 KiB) goes through ffmpeg.
`open_pcm_source` is the one entry point: it returns ffmpeg's decoder or this reader.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from tasks.errors import AudioNotFound
from tasks.ffmpeg import (
    OUTPUT_SAMPLE_RATE_HZ,
    AudioInfo,
    PcmDecoder,
    probe_with_confidence,
    read_head,
)
from tasks.sniff import check_wav_header

_PCM = 1
_EXTENSIBLE = 0xFFFE
# Data sizes a recorder writes before it knows the real one: read to the end instead.
_PLACEHOLDER_SIZES = {0, 0xFFFFFFFF, 0x7FFFFFFF, 0x7FFFF000}


@dataclass(frozen=True)
class _DataChunk:
    offset: int  # of the first sample byte
    size_bytes: int  # whole samples only


def native_data_chunk(head: bytes, *, size_bytes: int) -> _DataChunk | None:
    """Where the samples of a 16 kHz mono s16le RIFF WAV are; None for any other file."""
    if len(head) < 12 or head[:4] != b"RIFF" or head[8:12] != b"WAVE":
        return None
    offset, native = 12, False
    while offset + 8 <= len(head):
        chunk_id = head[offset : offset + 4]
        (size,) = struct.unpack_from("<I", head, offset + 4)
        if chunk_id == b"fmt ":
            native = _is_native_format(head[offset + 8 : offset + 8 + size])
        elif chunk_id == b"data":
            if not native:
                return None
            start = offset + 8
            present = max(0, size_bytes - start)
            declared = present if size in _PLACEHOLDER_SIZES else min(size, present)
            return _DataChunk(start, declared - declared % 2)
        offset += 8 + size + (size & 1)
    return None


def _is_native_format(fmt: bytes) -> bool:
    """True for PCM (plain or WAVE_FORMAT_EXTENSIBLE), 1 channel, 16 kHz, 16 bits."""
    if len(fmt) < 16:
        return False
    tag, channels, rate_hz, _, block_align, bits = struct.unpack_from("<HHIIHH", fmt)
    if tag == _EXTENSIBLE:
        if len(fmt) < 26:
            return False
        (tag,) = struct.unpack_from("<H", fmt, 24)  # first two bytes of the subformat GUID
    return (tag, channels, rate_hz, block_align, bits) == (_PCM, 1, OUTPUT_SAMPLE_RATE_HZ, 2, 16)


class NativeWavReader:
    """Reads the samples of a native WAV; the same surface as PcmDecoder."""

    def __init__(self, path: Path, data: _DataChunk) -> None:
        self.path = path
        self._left = data.size_bytes
        try:
            self._handle = path.open("rb", buffering=0)
            self._handle.seek(data.offset)
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            raise AudioNotFound(f"cannot read audio file {path}: {reason}", path=str(path)) from exc

    def __enter__(self) -> NativeWavReader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def readinto(self, view: memoryview) -> int:
        """Fill the start of `view` with PCM bytes; 0 at the end of the samples."""
        wanted = min(len(view), self._left)
        if wanted <= 0:
            return 0
        count = self._handle.readinto(view[:wanted]) or 0
        self._left = self._left - count if count else 0  # a file that shrank ends here
        return count

    def finish(self) -> None:
        """Nothing to wait for: the samples were read from the file itself."""

    def close(self) -> None:
        """Close the file; safe to call twice."""
        self._handle.close()


def open_pcm_source(
    path: Path, *, timeout_s: float, probe_timeout_s: float
) -> tuple[AudioInfo, bool, PcmDecoder | NativeWavReader]:
    """(info, exact duration?, reader) for `path`: ffmpeg unless the WAV is already native.

    Raises the AudioError subclasses of probe_audio for a file that cannot be opened.
    """
    head, size_bytes = read_head(path)
    check_wav_header(head, size_bytes=size_bytes, path=path)
    data = native_data_chunk(head, size_bytes=size_bytes)
    if data is None:
        info, exact = probe_with_confidence(path, timeout_s=probe_timeout_s)
        return info, exact, PcmDecoder(path, timeout_s=timeout_s)
    duration_ms = data.size_bytes // 2 * 1000 // OUTPUT_SAMPLE_RATE_HZ
    info = AudioInfo(
        duration_ms=duration_ms,
        sample_rate_hz=OUTPUT_SAMPLE_RATE_HZ,
        channels=1,
        codec="pcm_s16le",
        container="wav",
    )
    return info, True, NativeWavReader(path, data)
