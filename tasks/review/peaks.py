"""A recording's waveform as peaks, and the pauses that split a long chunk into parts a
person can navigate.

The speech service returns one text per chunk and no word timestamps, so a chunk's text
cannot be cut; what can be shown is where the speaker paused inside it. The peaks are
the loudest sample of each BUCKET_MS of the recording (0..255), decoded by ffmpeg at a
low rate and never written anywhere; they hold no words. `Peaks` are kept per recording
(its id and sha256) in a small in-process cache, so a page opened again costs nothing.
"""

from __future__ import annotations

import subprocess
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

BUCKET_MS = 100
RATE_HZ = 8_000
_BUCKET_SAMPLES = RATE_HZ * BUCKET_MS // 1000
_READ_BUCKETS = 2_048
_SMOOTH_BUCKETS = 3  # a pause is at least ~300 ms of quiet
_QUIET_SHARE = 0.1  # within this share of the window's range above its quietest: a pause


@dataclass(frozen=True)
class Peaks:
    """The loudest sample of each BUCKET_MS, scaled to 0..255."""

    values: np.ndarray

    @property
    def duration_ms(self) -> int:
        return len(self.values) * BUCKET_MS


@dataclass(frozen=True)
class Mark:
    """A pause inside a long chunk: where a sub-segment starts."""

    segment: int
    at_ms: int


def compute_peaks(*, ffmpeg: str, source: str) -> Peaks:
    """The peaks of the recording ffmpeg reads as `source` (its `-i` argument), decoded
    (mono, RATE_HZ) a block at a time."""
    command = [
        ffmpeg, "-nostdin", "-hide_banner", "-loglevel", "error", "-i", source,
        "-vn", "-ac", "1", "-ar", str(RATE_HZ), "-f", "s16le", "-acodec", "pcm_s16le", "pipe:1",
    ]  # fmt: skip
    found: list[np.ndarray] = []
    block = 2 * _BUCKET_SAMPLES * _READ_BUCKETS
    with subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    ) as process:
        assert process.stdout is not None
        while piece := process.stdout.read(block):
            found.append(_bucket_peaks(np.frombuffer(piece[: len(piece) // 2 * 2], "<i2")))
    values = np.concatenate(found) if found else np.zeros(0, np.uint8)
    return Peaks(values=values)


def _bucket_peaks(samples: np.ndarray) -> np.ndarray:
    whole = len(samples) // _BUCKET_SAMPLES * _BUCKET_SAMPLES
    rows = [np.abs(samples[:whole].astype(np.int32)).reshape(-1, _BUCKET_SAMPLES).max(axis=1)]
    if whole < len(samples):
        rows.append(np.array([np.abs(samples[whole:].astype(np.int32)).max()]))
    return (np.concatenate(rows) * 255 // 32768).astype(np.uint8)


def sub_segment_marks(
    peaks: Peaks, *, chunks: list[tuple[int, int, int]], max_ms: int
) -> list[Mark]:
    """Pauses splitting each (index, start_ms, end_ms) chunk longer than `max_ms` into
    parts of at most `max_ms`: in each stretch the latest quiet moment after its first
    third (few marks, none in a word when the speaker paused at all)."""
    if not len(peaks.values):  # nothing decoded (an unreadable recording): no pauses known
        return []
    quiet = np.convolve(peaks.values.astype(np.float64), np.ones(_SMOOTH_BUCKETS), mode="same")
    marks = []
    for index, start_ms, end_ms in chunks:
        at = start_ms
        while end_ms - at > max_ms:
            low, high = (at + max_ms // 3) // BUCKET_MS, (at + max_ms) // BUCKET_MS
            window = quiet[low:high]
            if len(window) == 0:
                break
            floor, ceiling = float(window.min()), float(window.max())
            calm = np.flatnonzero(window <= floor + _QUIET_SHARE * (ceiling - floor))
            at = (low + int(calm[-1])) * BUCKET_MS + BUCKET_MS // 2
            marks.append(Mark(segment=index, at_ms=at))
    return marks


class PeaksCache:
    """The last recordings' peaks in this process, by (item id, sha256)."""

    def __init__(self, *, max_recordings: int = 32) -> None:
        self._found: OrderedDict[tuple[int, str], Peaks] = OrderedDict()
        self._lock = threading.Lock()
        self._max = max_recordings
        self.computed = 0  # how many were decoded (the rest came from the cache)

    def peaks_of(self, key: tuple[int, str], *, ffmpeg: str, source: str) -> Peaks:
        """The cached peaks of `key`, else those ffmpeg decodes from `source` (then cached)."""
        with self._lock:
            if key in self._found:
                self._found.move_to_end(key)
                return self._found[key]
        peaks = compute_peaks(ffmpeg=ffmpeg, source=source)
        with self._lock:
            self.computed += 1
            self._found[key] = peaks
            while len(self._found) > self._max:
                self._found.popitem(last=False)
        return peaks
