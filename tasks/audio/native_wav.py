"""PCM and float WAVs are read without ffmpeg: as they are when already in the output
format (16 kHz mono s16le), else converted, downmixed and resampled here
(tasks/audio/resampler.py).

Decoding such a file is the identity or nearly, yet an ffmpeg run costs a process start
and a pass through its decoder (tens of ms of CPU per file, more than reading a 15 s
recording): on a backlog of short dictations that is the largest cost left. Read here:
8-bit unsigned, 16/24/32-bit signed and 32/64-bit float samples, plain or
WAVE_FORMAT_EXTENSIBLE (with no channel mask or the usual one, and a subformat GUID
ffmpeg reads as PCM or float), one or two channels,
8-96 kHz. Anything else (more channels, A-law, ADPCM, another rate, RF64, a data chunk
past the first 64 KiB) goes through ffmpeg, or, for a well-formed compressed file,
through a libav worker process when the caller has them (tasks/audio/decoder_pool.py).
`open_pcm_source` is the one entry point: it returns ffmpeg's decoder
(tasks/audio/decoder.py), the samples a worker decoded, this reader, or this reader
behind the converter.

A data size left as a placeholder (0, 0xFFFFFFFF or near it, written by streaming
recorders and by one that never closed its file)
means "to the end of the file", except that chunks appended after the samples (LIST,
id3 ) are recognized and left out; ffmpeg would decode them as a burst of noise.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType

from tasks.audio.decoder import PcmDecoder
from tasks.audio.decoder_pool import DecodedPcm, DecoderPool
from tasks.audio.ffmpeg import OUTPUT_SAMPLE_RATE_HZ, AudioInfo, read_head
from tasks.audio.resampler import SAMPLE_BYTES, ResampledReader, SampleFormat
from tasks.audio.riff import wave_chunks
from tasks.audio.sniff import (
    OGG_TAIL_BYTES,
    check_wav_header,
    is_placeholder_size,
    ogg_cut_short,
)
from tasks.audio.worker_stream import StreamedPcm
from tasks.errors import AudioNotFound

_PCM = 1
_FLOAT = 3
_EXTENSIBLE = 0xFFFE
# (format tag, bits per sample) -> the samples' format and ffmpeg's name for the codec.
_FORMATS: dict[tuple[int, int], tuple[SampleFormat, str]] = {
    (_PCM, 8): ("u8", "pcm_u8"),
    (_PCM, 16): ("s16", "pcm_s16le"),
    (_PCM, 24): ("s24", "pcm_s24le"),
    (_PCM, 32): ("s32", "pcm_s32le"),
    (_FLOAT, 32): ("f32", "pcm_f32le"),
    (_FLOAT, 64): ("f64", "pcm_f64le"),
}
# WAVE_FORMAT_EXTENSIBLE's speaker masks read here: none, front centre, front left+right.
_USUAL_MASKS = {1: (0, 0x4), 2: (0, 0x3)}
# The last 12 bytes of the subformat GUIDs under which ffmpeg reads the first 4 as a
# format tag (libavformat/riff.h): the media subtype base, the ambisonic one, and a
# broken base some writers use. Any other GUID is not PCM to ffmpeg, whatever its start.
_GUID_BASES = (
    bytes.fromhex("00001000800000aa00389b71"),
    bytes.fromhex("2107d3118644c8c1ca000000"),
    bytes.fromhex("0000000000001000800000aa"),
)

# Rates read without ffmpeg: telephone 8 kHz up to studio 96 kHz.
MIN_RATE_HZ = 8_000
MAX_RATE_HZ = 96_000
_TAIL_BYTES = 64 * 1024  # trailing metadata chunks longer than this are not looked for
# A chunk id: four printable ASCII characters, the first a letter (LIST, id3 , bext, cue ).
_CHUNK_ID = re.compile(rb"(?=[A-Za-z][\x20-\x7e]{3})")


@dataclass(frozen=True)
class _Layout:
    rate_hz: int = OUTPUT_SAMPLE_RATE_HZ
    channels: int = 1
    sample_format: SampleFormat = "s16"
    codec: str = "pcm_s16le"


@dataclass(frozen=True)
class _DataChunk:
    offset: int  # of the first sample byte
    size_bytes: int  # whole frames only
    placeholder: bool = False  # the header's size was a placeholder: read to the end
    layout: _Layout = _Layout()

    @property
    def rate_hz(self) -> int:
        return self.layout.rate_hz

    @property
    def channels(self) -> int:
        return self.layout.channels

    @property
    def frame_bytes(self) -> int:
        return SAMPLE_BYTES[self.layout.sample_format] * self.layout.channels

    @property
    def native(self) -> bool:
        """Already 16 kHz mono s16le: the samples are the output as they are."""
        return self.layout == _Layout()


def native_data_chunk(head: bytes, *, size_bytes: int) -> _DataChunk | None:
    """Where the samples of a 16 kHz mono s16le RIFF WAV are; None for any other file."""
    data = pcm_data_chunk(head, size_bytes=size_bytes)
    return data if data is not None and data.native else None


def pcm_data_chunk(head: bytes, *, size_bytes: int) -> _DataChunk | None:
    """Where the samples of a RIFF WAV that medasr reads itself are (see the module
    docstring), with their layout; None for any other file."""
    layout = None
    seen_fmt = False
    for chunk in wave_chunks(head):
        if chunk.chunk_id == b"fmt " and not seen_fmt:  # ffmpeg reads the first one only
            layout = _layout(head[chunk.offset : chunk.offset + chunk.size_bytes])
            seen_fmt = True
        elif chunk.chunk_id == b"data":
            if layout is None:
                return None
            present = max(0, size_bytes - chunk.offset)
            placeholder = is_placeholder_size(chunk.size_bytes)
            declared = present if placeholder else min(chunk.size_bytes, present)
            frame_bytes = SAMPLE_BYTES[layout.sample_format] * layout.channels
            whole = declared - declared % frame_bytes
            return _DataChunk(chunk.offset, whole, placeholder, layout)
    return None


def _trailing_chunks_start(tail: bytes, *, tail_offset: int, data: _DataChunk) -> int | None:
    """File offset where RIFF chunks that end exactly at the end of the file begin, if any.

    `tail` is the file's last bytes, from `tail_offset`. A recorder that never learned its
    data size may still append chunks (LIST, id3 ) after the samples; ffmpeg would read
    them as samples. A chain of chunks landing exactly on the end of the file is all but
    impossible in sample data, so it is taken for metadata.
    """
    for match in _CHUNK_ID.finditer(tail):
        start = tail_offset + match.start()
        if start < data.offset or (start - data.offset) % data.frame_bytes:
            continue  # chunks after the samples start on a whole frame
        if _chain_ends_at(tail, match.start()):
            return start
    return None


def _chain_ends_at(tail: bytes, position: int) -> bool:
    """True when RIFF chunks from `position` follow each other up to exactly the end of `tail`."""
    while position + 8 <= len(tail):
        if not _CHUNK_ID.match(tail, position):
            return False
        (size,) = struct.unpack_from("<I", tail, position + 4)
        position += 8 + size + (size & 1)
        if position in (len(tail), len(tail) + 1):  # the pad byte of the last one may be absent
            return True
    return False


def _layout(fmt: bytes) -> _Layout | None:
    """The layout of a `fmt ` chunk medasr reads itself (see the module docstring); None
    for any other format."""
    if len(fmt) < 16:
        return None
    tag, channels, rate_hz, _, block_align, bits = struct.unpack_from("<HHIIHH", fmt)
    if tag == _EXTENSIBLE:
        if len(fmt) < 40:
            return None
        (mask, tag) = struct.unpack_from("<II", fmt, 20)  # the subformat GUID's first bytes
        if mask not in _USUAL_MASKS.get(channels, ()) or fmt[28:40] not in _GUID_BASES:
            return None
    known = _FORMATS.get((tag, bits))
    if known is None or channels not in (1, 2) or block_align != bits // 8 * channels:
        return None
    if not MIN_RATE_HZ <= rate_hz <= MAX_RATE_HZ:
        return None
    return _Layout(rate_hz, channels, *known)


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


# What open_pcm_source hands back: each is a context manager whose `readinto` fills
# 16 kHz mono s16le samples and whose `finish` says how decoding ended.
PcmReader = PcmDecoder | DecodedPcm | StreamedPcm | NativeWavReader | ResampledReader


def open_pcm_source(
    path: Path, *, timeout_s: float, probe_timeout_s: float, decoders: DecoderPool | None = None
) -> tuple[AudioInfo, bool, PcmReader]:
    """(info, exact duration?, reader) for `path`: ffmpeg unless the WAV is one medasr
    reads itself or `decoders` (libav worker processes) decode a well-formed file.

    Raises the AudioError subclasses of probe_audio for a file that cannot be opened.
    An Ogg file cut short comes back with `info.truncated` saying so.
    """
    head, size_bytes = read_head(path)
    check_wav_header(head, size_bytes=size_bytes, path=path)
    data = pcm_data_chunk(head, size_bytes=size_bytes)
    if data is None:
        cut = _ogg_cut_short(path, head=head, size_bytes=size_bytes)
        info, exact, reader = _decoded(path, head, timeout_s, probe_timeout_s, decoders)
        if cut is not None and info.truncated is None:
            info = replace(info, truncated=f"truncated audio file: {path} ({cut})")
        return info, exact, reader
    if data.placeholder:
        data = _without_trailing_chunks(path, data, size_bytes=size_bytes)
    info = AudioInfo(
        duration_ms=data.size_bytes // data.frame_bytes * 1000 // data.rate_hz,
        sample_rate_hz=data.rate_hz,
        channels=data.channels,
        codec=data.layout.codec,
        container="wav",
    )
    reader = NativeWavReader(path, data)
    if data.native:
        return info, True, reader
    layout = data.layout
    converted = ResampledReader(
        reader, rate_hz=layout.rate_hz, channels=layout.channels, sample_format=layout.sample_format
    )
    return info, True, converted


def _decoded(
    path: Path, head: bytes, timeout_s: float, probe_timeout_s: float, decoders: DecoderPool | None
) -> tuple[AudioInfo, bool, PcmReader]:
    """(info, exact duration?, reader) of a file a libav worker or ffmpeg decodes."""
    if decoders is not None:
        decoded = decoders.decode(path, head=head, timeout_s=timeout_s)
        if decoded is not None:
            return decoded[0], decoded[1].exact, decoded[1]
    # One ffmpeg run both describes the input (before any sample) and decodes it.
    decoder = PcmDecoder(path, timeout_s=timeout_s)
    info, exact = decoder.read_info(head=head, timeout_s=probe_timeout_s)
    return info, exact, decoder


def _ogg_cut_short(path: Path, *, head: bytes, size_bytes: int) -> str | None:
    """Why an Ogg file is cut short (sniff.ogg_cut_short); None for a whole one or another file."""
    if not head.startswith(b"OggS"):
        return None
    tail_offset = max(0, size_bytes - OGG_TAIL_BYTES)
    return ogg_cut_short(_read_bytes(path, tail_offset, size_bytes - tail_offset))


def _read_bytes(path: Path, offset: int, count: int) -> bytes:
    """`count` bytes of `path` from `offset` (fewer at its end); raises AudioNotFound."""
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            return handle.read(count)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise AudioNotFound(f"cannot read audio file {path}: {reason}", path=str(path)) from exc


def _without_trailing_chunks(path: Path, data: _DataChunk, *, size_bytes: int) -> _DataChunk:
    """`data` ending where chunks appended after samples of unknown size begin, if any."""
    tail_offset = max(data.offset, size_bytes - _TAIL_BYTES)
    tail = _read_bytes(path, tail_offset, size_bytes - tail_offset)
    start = _trailing_chunks_start(tail, tail_offset=tail_offset, data=data)
    if start is None:
        return data
    return replace(data, size_bytes=min(data.size_bytes, start - data.offset))
