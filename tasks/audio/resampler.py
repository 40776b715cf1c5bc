"""PCM or float samples of any rate, mono or stereo -> 16 kHz mono s16le, in this process.

An ffmpeg process per WAV costs its start (about 10 ms of CPU for the static build) and
a pass through its resampler: 20-50 ms of CPU for a 15 s dictation, three to ten times
what soxr (libsoxr, the SoX resampler, at its "high quality" setting) spends on the same
samples here.

What is sent is one of two things, tested against the ffmpeg command `-ac 1 -ar 16000`
(tests/tasks/audio/test_resampled_wav.py, test_wav_formats.py):
- 16 kHz mono of any sample format: ffmpeg's own conversion to s16, byte for byte
  (24/32-bit keep the top 16 bits, 8-bit is re-centred, floats are rounded and clipped);
- any other rate, or stereo: a sample-accurate equivalent, the same number of samples
  on the same time grid, within a fraction of a quantization step's noise of ffmpeg's
  (its resampler and soxr differ in their filters only).
Stereo is the mean of the two channels (what ffmpeg's `-ac 1` does), then resampled as
32-bit floats and rounded once. A float sample that is no number (NaN) is read as 0 and
an infinite one as full scale of its sign: ffmpeg makes each its most negative sample, and
a NaN left in would spread through the resampler's filter to every sample near it.
The stream is converted block by block: memory holds a block, whatever the recording's
length.
"""

from __future__ import annotations

from typing import Final, Literal, Protocol

import numpy as np
import soxr

from tasks.audio.ffmpeg import OUTPUT_SAMPLE_RATE_HZ

SampleFormat = Literal["u8", "s16", "s24", "s32", "f32", "f64"]
SAMPLE_BYTES: Final[dict[SampleFormat, int]] = {
    "u8": 1, "s16": 2, "s24": 3, "s32": 4, "f32": 4, "f64": 8,
}  # fmt: skip
_BLOCK_FRAMES = 64 * 1024


class RawReader(Protocol):
    """Bytes of interleaved little-endian frames, as NativeWavReader reads them."""

    def readinto(self, view: memoryview) -> int: ...

    def close(self) -> None: ...


class ResampledReader:
    """16 kHz mono s16le out of `raw`'s frames at `rate_hz` with `channels` (1 or 2) in
    `sample_format`; the same surface as PcmDecoder."""

    def __init__(
        self, raw: RawReader, *, rate_hz: int, channels: int, sample_format: SampleFormat = "s16"
    ) -> None:
        self._raw = raw
        self._channels = channels
        self._format: SampleFormat = sample_format
        self._frame_bytes = SAMPLE_BYTES[sample_format] * channels
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
        samples = _samples_of(memoryview(self._block)[:whole], self._format)
        if self._stream is None and self._channels == 1:
            return _ffmpeg_s16(samples, self._format)
        frames = samples.reshape(-1, self._channels)
        # Channel by channel: numpy's sum along a short axis with a cast is ten times slower.
        mono = frames[:, 0].astype(np.float32)
        for channel in range(1, self._channels):
            mono += frames[:, channel]
        mono *= np.float32(_FULL_SCALE[self._format] / self._channels)
        if self._format == "u8":
            mono -= np.float32(1)
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


# What one unit of each format's numbers is, as a float in [-1, 1) (8-bit: in [0, 2)).
_FULL_SCALE: Final[dict[SampleFormat, float]] = {
    "u8": 1 / 128, "s16": 1 / 32768, "s24": 1 / 2**31, "s32": 1 / 2**31, "f32": 1.0, "f64": 1.0,
}  # fmt: skip
_DTYPES: Final[dict[SampleFormat, str]] = {
    "u8": "u1", "s16": "<i2", "s32": "<i4", "f32": "<f4", "f64": "<f8",
}  # fmt: skip


def _samples_of(raw: memoryview, sample_format: SampleFormat) -> np.ndarray:
    """The interleaved samples of `raw`; 24-bit ones as 32-bit with the low byte zero,
    as ffmpeg's decoder gives them; floats with NaN as 0 and infinities as +-1."""
    if sample_format in ("f32", "f64"):
        samples = np.frombuffer(raw, dtype=_DTYPES[sample_format])
        if np.isfinite(samples).all():
            return samples
        finite: np.ndarray = np.nan_to_num(samples, nan=0.0, posinf=1.0, neginf=-1.0)
        return finite
    if sample_format != "s24":
        return np.frombuffer(raw, dtype=_DTYPES[sample_format])
    # Each sample read as the 32-bit word starting at its first byte (strides of 3, one
    # byte of padding for the last), then shifted up a byte: its low byte becomes zero
    # and the next sample's byte falls off the top. A copy into 4-byte rows cost 1 ms
    # per 64k frames, half the CPU of a 15 s 24-bit stereo file.
    padded = bytearray(len(raw) + 1)
    padded[: len(raw)] = raw
    words = np.ndarray((len(raw) // 3,), dtype="<u4", buffer=padded, strides=(3,))
    return (words << np.uint32(8)).view("<i4")


def _ffmpeg_s16(samples: np.ndarray, sample_format: SampleFormat) -> bytes:
    """Mono samples as s16le the way ffmpeg's sample-format conversion makes them."""
    if sample_format == "s16":
        return samples.tobytes()
    if sample_format == "u8":
        return ((samples.astype("<i2") - 128) << 8).astype("<i2").tobytes()
    if sample_format in ("s24", "s32"):
        return (samples.astype("<i4") >> 16).astype("<i2").tobytes()  # the top 16 bits
    scaled = np.rint(samples * 32768)  # in the samples' own precision (float32 stays float32)
    return _to_s16le_rounded(scaled)


def _to_s16le(samples: np.ndarray) -> bytes:
    """Floats in [-1, 1) as s16le, rounded to the nearest step and clipped."""
    return _to_s16le_rounded(np.rint(samples * np.float32(32768)))


def _to_s16le_rounded(scaled: np.ndarray) -> bytes:
    """Whole numbers clipped to 16 bits, as s16le."""
    clipped: np.ndarray = np.clip(scaled, -32768, 32767)
    return clipped.astype("<i2").tobytes()
