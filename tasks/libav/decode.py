"""An mp3, m4a, FLAC, Ogg or AIFF decoded by libav, as `ffmpeg -i F -ac 1 -ar 16000`
decodes it: whole for a short file, in pieces for a long one.

libav's own decoders and resampler (swresample with its defaults), the ones the ffmpeg
command runs; the decoded frames are cut where the container says the stream ends, before
resampling, as ffmpeg cuts them (an m4a's last AAC frame carries the encoder's padding past
that point, and the resampler's last samples depend on where its input ends). The
resampler's output so far depends only on its input so far, so each piece handed on is the
next stretch of the ffmpeg command's bytes.

Only what is plainly well-formed is decoded: an mp3, MP4/M4A, FLAC, Ogg or AIFF container
with an audio stream and a duration. A file of at most `MAX_WHOLE_MS` is decoded whole
before anything is handed on (at most ~9.6 MB of samples; one that decodes to 5 % more,
its duration a guess, goes to ffmpeg) and kept only if every packet decoded without an
error into at least as many samples as the duration promises, give or take the
splitter's own margin: `decode_whole` returns None otherwise. A longer file is
handed on in pieces of `PIECE_BYTES` as it decodes (`open_stream`, `Stream.iter_pieces`)
when, before decoding, nothing says ffmpeg's probe would find it truncated
(`Stream.streamable`); its verdict (`Stream.fit`: every packet decoded and, when ffmpeg
would read the duration rather than estimate it, the length as promised) comes at the end.
Whatever is unfit goes to ffmpeg from its start (tasks/audio/decoder.py and
tasks/audio/worker_stream.py), so a damaged, truncated or odd file still meets the errors
worded from ffmpeg's own messages.

Imports PyAV and the standard library only (the worker's start-up is its cost).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Any

import av
import av.logging

MAX_WHOLE_MS = 5 * 60 * 1000  # decoded whole, judged before the first sample leaves
PIECE_BYTES = 512 * 1024  # a longer file leaves in pieces of this (16.4 s of samples)
OUTPUT_SAMPLE_RATE_HZ = 16_000  # tasks/audio/ffmpeg.py's, without importing tasks.audio
_CONTAINERS = frozenset({"mp3", "mov,mp4,m4a,3gp,3g2,mj2", "flac", "ogg", "aiff"})
_SHORT_MARGIN_MS = 500  # decoded this much (plus 5 %) under the promise: ffmpeg decides
# The most a file decoded whole may hold (5 % over MAX_WHOLE_MS): one whose duration
# libavformat estimated from its first frames' bitrate may be far longer than that.
_WHOLE_MAX_BYTES = MAX_WHOLE_MS * 105 // 100 * OUTPUT_SAMPLE_RATE_HZ // 1000 * 2
# tasks/audio/ffmpeg.py's size check (file bitrate under 0.9 of the stream's: truncated),
# with a margin: a file near that line is left to ffmpeg.
_SIZE_CHECKED_CONTAINERS = frozenset({"mp3", "mov,mp4,m4a,3gp,3g2,mj2"})
_SIZE_RATIO_MIN = 0.95
_ESTIMATED = "Estimating duration"  # libavformat's warning; ffmpeg's probe reads it too
_DECODE_ERRORS = (av.FFmpegError, OSError, ValueError, EOFError)


@dataclass(frozen=True)
class Described:
    """What the container says of its first audio stream (tasks.audio's AudioInfo fields)."""

    duration_ms: int
    sample_rate_hz: int
    channels: int
    codec: str
    container: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class Stream:
    """An open file whose first audio stream decodes in pieces (`iter_pieces`); `exact`
    says whether ffmpeg would call its duration read rather than estimated."""

    def __init__(self, container: Any, described: Described, *, exact: bool) -> None:
        self.container = container
        self.described = described
        self.exact = exact  # False: libavformat guessed the duration from the bitrate
        self.decoded_bytes = 0
        self.fit = False  # every packet decoded, and (if checked) the length as promised

    @property
    def streamable(self) -> bool:
        """Whether it may leave in pieces: nothing says ffmpeg's probe would find it
        truncated (then ffmpeg decodes it and words the error)."""
        return not _looks_truncated(self.container, self.described)

    def close(self) -> None:
        self.container.close()

    def iter_pieces(self, *, piece_bytes: int, check_length: bool) -> Iterator[bytearray]:
        """16 kHz mono s16le samples in pieces of at least `piece_bytes` (the last may be
        shorter; the same bytearray, refilled: hand each on before the next). At the end,
        `fit` is the verdict (with `check_length`, at least the length the duration
        promises); an error ends the pieces early with `fit` False."""
        pcm = bytearray()
        try:
            for out in _resampled(self.container, cut_at_end=self.exact):
                pcm += memoryview(out.planes[0])[: 2 * out.samples]
                if len(pcm) >= piece_bytes:
                    self.decoded_bytes += len(pcm)
                    yield pcm
                    pcm.clear()
        except _DECODE_ERRORS:
            return
        self.decoded_bytes += len(pcm)
        if pcm:
            yield pcm
        self.fit = not check_length or _long_enough(self.decoded_bytes, self.described)


def open_stream(path: str) -> Stream | None:
    """The absolute `path` opened for decoding, if it looks well-formed (see the module
    docstring); None when ffmpeg should decode it instead."""
    av.logging.set_skip_repeated(False)  # the second file's warning is as much news
    with av.logging.Capture(local=True) as said:
        av.logging.set_level(av.logging.WARNING)  # to hear "Estimating duration"
        try:
            container = av.open("file:" + path, mode="r")  # no protocol prefix hijacks it
        except _DECODE_ERRORS:
            return None
        finally:
            av.logging.set_level(None)
    try:
        described = _described(container)
    except _DECODE_ERRORS:
        described = None
    if described is None:
        container.close()
        return None
    exact = not any(_ESTIMATED in message for _, _, message in said)
    return Stream(container, described, exact=exact)


def decode_whole(stream: Stream) -> bytearray | None:
    """The samples of an open file of at most MAX_WHOLE_MS, decoded whole; None when ffmpeg
    should decode it instead (an error, or fewer samples than the duration promises)."""
    if stream.described.duration_ms > MAX_WHOLE_MS:
        return None
    pcm = bytearray()
    # One piece, all of it; its length checked whatever ffmpeg's probe would say of it.
    for piece in stream.iter_pieces(piece_bytes=_WHOLE_MAX_BYTES + 1, check_length=True):
        if len(piece) > _WHOLE_MAX_BYTES:  # far longer than a guessed duration: ffmpeg's
            return None
        pcm = piece
    return pcm if stream.fit else None


def _described(container: Any) -> Described | None:
    """The first audio stream's description; None if the container is not one decoded here."""
    streams = container.streams.audio
    if container.format.name not in _CONTAINERS or not streams or container.duration is None:
        return None
    # Rounded to centiseconds the way ffmpeg prints "Duration:" (what the probe reads).
    duration_ms = (container.duration + 5_000) // 10_000 * 10
    if duration_ms <= 0:
        return None
    stream = streams[0]
    return Described(
        duration_ms=duration_ms,
        sample_rate_hz=stream.sample_rate,
        channels=stream.codec_context.layout.nb_channels,
        codec=stream.codec_context.codec.canonical_name,
        container=container.format.name,
    )


def _looks_truncated(container: Any, described: Described) -> bool:
    """Whether ffmpeg's probe might find the file far shorter than its header promises
    (tasks/audio/ffmpeg.py `_size_shortfall`: the file's bitrate against the stream's)."""
    if described.container not in _SIZE_CHECKED_CONTAINERS or described.duration_ms <= 1000:
        return False
    file_kbps = (container.bit_rate or 0) // 1000
    stream_kbps = (container.streams.audio[0].bit_rate or 0) // 1000
    if not file_kbps or not stream_kbps:
        return False
    return file_kbps / stream_kbps < _SIZE_RATIO_MIN


def _long_enough(decoded_bytes: int, described: Described) -> bool:
    decoded_ms = decoded_bytes // 2 * 1000 // OUTPUT_SAMPLE_RATE_HZ
    return decoded_ms >= 0.95 * described.duration_ms - _SHORT_MARGIN_MS


def _resampled(container: Any, *, cut_at_end: bool) -> Iterator[Any]:
    """The first audio stream's frames, cut at its end (unless that end is a guess) and
    resampled to 16 kHz mono s16."""
    stream = container.streams.audio[0]
    resampler = av.AudioResampler(format="s16", layout="mono", rate=OUTPUT_SAMPLE_RATE_HZ)
    frames = container.decode(stream)
    for frame in _until_stream_end(frames, stream=stream) if cut_at_end else frames:
        yield from resampler.resample(frame)
    yield from resampler.resample(None)


def _until_stream_end(frames: Iterator[Any], *, stream: Any) -> Iterator[Any]:
    """The decoded frames, the last cut where the container says the stream ends."""
    if stream.duration is None or stream.time_base is None:
        yield from frames
        return
    end_s = Fraction(stream.start_time or 0) * stream.time_base
    end_s += Fraction(stream.duration) * stream.time_base
    for frame in frames:
        if frame.pts is None:
            yield frame
            continue
        start_s = Fraction(frame.pts) * frame.time_base
        keep = math.ceil((end_s - start_s) * frame.sample_rate)
        if keep >= frame.samples:
            yield frame
        elif keep > 0:
            yield _head_of(frame, samples=keep)


def _head_of(frame: Any, *, samples: int) -> Any:
    """A frame of the first `samples` samples of `frame` (plane by plane: no numpy)."""
    head = av.AudioFrame(format=frame.format.name, layout=frame.layout.name, samples=samples)
    per_sample = frame.format.bytes * (1 if frame.format.is_planar else frame.layout.nb_channels)
    used = samples * per_sample
    for source, target in zip(frame.planes, head.planes, strict=True):
        data = bytearray(target.buffer_size)
        data[:used] = memoryview(source)[:used]
        target.update(bytes(data))
    head.sample_rate, head.pts, head.time_base = frame.sample_rate, frame.pts, frame.time_base
    return head
