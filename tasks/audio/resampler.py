"""16-bit PCM of another rate or two channels -> 16 kHz mono s16le, in this process.

An ffmpeg process per WAV costs its start (about 10 ms of CPU for the static build) and
a pass through its resampler: 20-50 ms of CPU for a 15 s dictation, three to ten times
what soxr (libsoxr, the SoX resampler, at its "high quality" setting) spends on the same
samples here. The output agrees with ffmpeg's `-ac 1 -ar 16000` within a fraction of a
quantization step's noise (tests/tasks/audio/test_resampled_wav.py compares them).

Stereo is the mean of the two channels (what ffmpeg's `-ac 1` does), then resampled as
32-bit floats and rounded once. The stream is converted block by block: memory holds a
block, whatever the recording's length.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
import soxr

from tasks.audio.ffmpeg import OUTPUT_SAMPLE_RATE_HZ

_BLOCK_FRAMES = 64 * 1024


class RawReader(Protocol):
    """Bytes of interleaved s16le frames, as NativeWavReader reads them from a file."""

    def readinto(self, view: memoryview) -> int: ...

    def close(self) -> None: ...


class ResampledReader:
    """16 kHz mono s16le out of `raw`'s frames at `rate_hz` with `channels` (1 or 2);
    the same surface as PcmDecoder."""

    def __init__(self, raw: RawReader, *, rate_hz: int, channels: int) -> None:
        self._raw = raw
        self._channels = channels
        self._frame_bytes = 2 * channels
        self._stream = (
            None
            if rate_hz == OUTPUT_SAMPLE_RATE_HZ
            else soxr.ResampleStream(rate_hz, OUTPUT_SAMPLE_RATE_HZ, 1, dtype="float32")
        )
        self._block = bytearray(_BLOCK_FRAMES * self._frame_bytes)
        self._pending = memoryview(b"")
        self._ended = False

    def __enter__(self) -> ResampledReader:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def readinto(self, view: memoryview) -> int:
        """Fill the start of `view` with 16 kHz mono PCM bytes; 0 at the end."""
        while not self._pending and not self._ended:
            self._pending = memoryview(self._convert_next_block())
        count = min(len(view), len(self._pending))
        view[:count] = self._pending[:count]
        self._pending = self._pending[count:]
        return count

    def _convert_next_block(self) -> bytes:
        """The output of the next block of input frames (the flush at the end)."""
        filled = self._fill_block()
        self._ended = filled < len(self._block)  # a full block holds whole frames only
        whole = filled - filled % self._frame_bytes  # a file that shrank may end mid-frame
        frames = np.frombuffer(self._block, dtype="<i2", count=whole // 2)
        frames = frames.reshape(-1, self._channels)
        # Channel by channel: numpy's sum along a short axis with a cast is ten times slower.
        mono = frames[:, 0].astype(np.float32)
        for channel in range(1, self._channels):
            mono += frames[:, channel]
        mono *= np.float32(1 / (self._channels * 32768))
        if self._stream is not None:
            mono = self._stream.resample_chunk(mono, last=self._ended)
        return _to_s16le(mono)

    def _fill_block(self) -> int:
        """Read until the block is full or the samples end; the bytes in the block."""
        view = memoryview(self._block)
        filled = 0
        while filled < len(self._block) and (count := self._raw.readinto(view[filled:])):
            filled += count
        return filled

    def finish(self) -> None:
        """Nothing to wait for: the samples were read from the file itself."""

    def close(self) -> None:
        """Close the source; safe to call twice."""
        self._raw.close()


def _to_s16le(samples: np.ndarray) -> bytes:
    """Floats in [-1, 1) as s16le, rounded to the nearest step and clipped."""
    scaled = np.rint(samples * np.float32(32768))
    return np.clip(scaled, -32768, 32767).astype("<i2").tobytes()
