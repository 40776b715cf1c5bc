"""Short mp3 and m4a dictations decoded in medasr's process with PyAV, not by an ffmpeg
process: libav's own decoders and resampler, the ones the ffmpeg command runs.

An ffmpeg process per file costs its start (about 10 ms of CPU for the static binary),
a pipe and a description to parse: on a backlog of 15 s dictations that is most of the
decoding's cost (bench/README.md "Night"). The output is the bytes `ffmpeg -ac 1 -ar
16000` gives (libswresample with its defaults), cut where the container says the stream
ends: an m4a's last AAC frame carries the encoder's padding past that point, which the
ffmpeg command drops too.

Only what is plainly well-formed is decoded here, whole, before its first sample is
read: an mp3 or MP4/M4A container with an audio stream, a duration of at most
`MAX_DURATION_MS` (so one decoding thread holds at most ~9.6 MB of samples), every packet
decoded without an error, and at least as many samples as the duration promises, give
or take the splitter's own margin. For anything else `decode_in_process` returns None
and ffmpeg decodes the file from its start (tasks/audio/decoder.py), so a damaged,
truncated or odd file still meets the errors worded from ffmpeg's own messages.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from types import TracebackType
from typing import Any

from tasks.audio.ffmpeg import OUTPUT_SAMPLE_RATE_HZ, AudioInfo, input_arg

MAX_DURATION_MS = 5 * 60 * 1000
_CONTAINERS = frozenset({"mp3", "mov,mp4,m4a,3gp,3g2,mj2"})
_MAGIC = ((0, b"ID3"), (4, b"ftyp"))
_SHORT_MARGIN_MS = 500  # decoded this much (plus 5 %) under the promise: ffmpeg decides


class DecodedPcm:
    """A recording's 16 kHz mono s16le samples, decoded already; read like ffmpeg's pipe."""

    def __init__(self, pcm: bytes | bytearray) -> None:
        self._pcm = memoryview(pcm)
        self._at = 0

    def __enter__(self) -> DecodedPcm:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def readinto(self, view: memoryview) -> int:
        """Fill the start of `view` with the next samples; 0 at the end."""
        count = min(len(view), len(self._pcm) - self._at)
        view[:count] = self._pcm[self._at : self._at + count]
        self._at += count
        return count

    def finish(self) -> None:
        """Nothing to wait for: every sample was decoded before the first read."""

    def close(self) -> None:
        """Let the samples go; safe to call twice."""
        self._pcm = memoryview(b"")
        self._at = 0


def decode_in_process(path: Path, *, head: bytes) -> tuple[AudioInfo, DecodedPcm] | None:
    """(info, samples) of a short, well-formed mp3 or m4a; None when ffmpeg should decode
    `path` instead (another format, too long, any error, fewer samples than promised)."""
    if not any(head[at : at + len(magic)] == magic for at, magic in _MAGIC) and not (
        len(head) > 1 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0  # an MPEG audio frame
    ):
        return None
    import av  # here: the ffmpeg-only paths need not load libav

    try:
        with av.open(input_arg(path), mode="r") as container:
            return _decode_whole(container)
    except (av.FFmpegError, OSError, ValueError, EOFError):
        return None


def _decode_whole(container: Any) -> tuple[AudioInfo, DecodedPcm] | None:
    """The container's first audio stream, decoded and resampled; None if it is unfit."""
    import av

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
    info = AudioInfo(
        duration_ms=duration_ms,
        sample_rate_hz=stream.sample_rate,
        channels=stream.codec_context.layout.nb_channels,
        codec=stream.codec_context.codec.canonical_name,
        container=container.format.name,
    )
    return info, DecodedPcm(pcm)


def _until_stream_end(frames: Iterator[Any], *, stream: Any) -> Iterator[Any]:
    """The decoded frames, the last cut where the container says the stream ends (before
    resampling, as ffmpeg cuts it: the resampler's last samples depend on it)."""
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
    """A frame of the first `samples` samples of `frame`."""
    import av

    array = frame.to_ndarray()
    width = samples if frame.format.is_planar else samples * frame.layout.nb_channels
    head = av.AudioFrame.from_ndarray(
        array[:, :width].copy(), format=frame.format.name, layout=frame.layout.name
    )
    head.sample_rate, head.pts, head.time_base = frame.sample_rate, frame.pts, frame.time_base
    return head
