"""A short mp3, m4a, FLAC, Ogg or AIFF decoded whole by libav, as `ffmpeg -i F -ac 1 -ar
16000` decodes it.

libav's own decoders and resampler (swresample with its defaults), the ones the ffmpeg
command runs; the decoded frames are cut where the container says the stream ends, before
resampling, as ffmpeg cuts them (an m4a's last AAC frame carries the encoder's padding past
that point, and the resampler's last samples depend on where its input ends).

Only what is plainly well-formed is decoded: an mp3, MP4/M4A, FLAC, Ogg or AIFF container
with an audio stream, a duration of at most `MAX_DURATION_MS` (at most ~9.6 MB of
samples), every packet decoded without an error, and at least as many samples as the
duration promises, give or take the splitter's own margin. For anything else
`decode_whole` returns None and ffmpeg decodes the file from its start
(tasks/audio/decoder.py), so a damaged, truncated or odd file still meets the errors
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

MAX_DURATION_MS = 5 * 60 * 1000
OUTPUT_SAMPLE_RATE_HZ = 16_000  # tasks/audio/ffmpeg.py's, without importing tasks.audio
_CONTAINERS = frozenset({"mp3", "mov,mp4,m4a,3gp,3g2,mj2", "flac", "ogg", "aiff"})
_SHORT_MARGIN_MS = 500  # decoded this much (plus 5 %) under the promise: ffmpeg decides


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


def decode_whole(path: str) -> tuple[Described, bytearray] | None:
    """(description, 16 kHz mono s16le samples) of a short, well-formed compressed file at the
    absolute `path`; None when ffmpeg should decode it instead."""
    try:
        with av.open("file:" + path, mode="r") as container:  # no protocol prefix hijacks it
            return _decode_container(container)
    except (av.FFmpegError, OSError, ValueError, EOFError):
        return None


def _decode_container(container: Any) -> tuple[Described, bytearray] | None:
    """The container's first audio stream, decoded and resampled; None if it is unfit."""
    streams = container.streams.audio
    if container.format.name not in _CONTAINERS or not streams or container.duration is None:
        return None
    # Rounded to centiseconds the way ffmpeg prints "Duration:" (what the probe reads).
    duration_ms = (container.duration + 5_000) // 10_000 * 10
    if not 0 < duration_ms <= MAX_DURATION_MS:
        return None
    stream = streams[0]
    resampler = av.AudioResampler(format="s16", layout="mono", rate=OUTPUT_SAMPLE_RATE_HZ)
    pcm = bytearray()
    for frame in _until_stream_end(container.decode(stream), stream=stream):
        for out in resampler.resample(frame):
            pcm += memoryview(out.planes[0])[: 2 * out.samples]
    for out in resampler.resample(None):
        pcm += memoryview(out.planes[0])[: 2 * out.samples]
    decoded_ms = len(pcm) // 2 * 1000 // OUTPUT_SAMPLE_RATE_HZ
    if decoded_ms < 0.95 * duration_ms - _SHORT_MARGIN_MS:
        return None
    described = Described(
        duration_ms=duration_ms,
        sample_rate_hz=stream.sample_rate,
        channels=stream.codec_context.layout.nb_channels,
        codec=stream.codec_context.codec.canonical_name,
        container=container.format.name,
    )
    return described, pcm


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
