"""Where to cut a stream of 16 kHz samples: levels, a speech threshold, the best pause.

Levels are RMS in dBFS of 20 ms frames on a grid fixed to the start of the recording.
The thresholds are relative to the recording's own levels, learned while streaming from
a histogram of every frame seen up to the current decision (0.5 dB bins, so it is cheap
and exact to query, and the same input always gives the same answers):

* noise floor = 5th percentile of the frames (clamped at -90 dBFS). A low percentile
  does not move when speech is rare: 30 minutes of room noise before a minute of
  dictation only make it surer;
* a frame is speech when it rises clearly above the floor: 8 dB (for stationary room
  noise and hum a 20 ms frame hardly ever strays 2 dB) and above -70 dBFS. A chunk holds
  speech when at least two of its frames are speech (one loud frame is a click); a
  recording is silent when none of its chunks does;
* speech level = 95th percentile of the speech frames only (of every frame when there
  are none): how much silence surrounds the speech does not change it. The quiet
  threshold for cutting is max(floor + 6 dB, speech - 35 dB), never above the midpoint
  of floor and speech, with the speech level of the chunk being cut (`for_chunk`) so
  that a speaker 35 dB quieter late in the file is cut at his own pauses.

Why not a speech level over every frame, with a chunk silent when it holds nothing near
it: after ten minutes of room noise that "speech level" is the noise, and the dictation
that follows would be skipped as silent. Deciding per chunk against the floor seen so
far keeps the decode one streaming pass (memory bounded by a chunk); the floor of a
prefix can only be higher than the whole file's when the quietest stretch comes later,
and then what is judged silent is sound that does not rise above the background around
it.

Cut rule (DESIGN.md §4): within the window that is the last 40% of the chunk's cap,
cut in the middle of the longest pause (a run of quiet frames at least min_pause_ms
long, clipped to the window; the later one on a tie); with no pause there, in the
middle of the quietest frame (the later one on a tie). The 40% window keeps chunks at
60-100% of the cap (few requests) while leaving a few seconds of dictation to find a
sentence break in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

SAMPLE_RATE_HZ = 16_000
FRAME_MS = 20
FRAME_SAMPLES = SAMPLE_RATE_HZ * FRAME_MS // 1000
WINDOW_SHARE = 0.4

_MIN_DB = -120.0
_BIN_DB = 0.5
_BINS = int(-_MIN_DB / _BIN_DB) + 1
_FLOOR_CLAMP_DB = -90.0
_MIN_SPEECH_DB = -70.0
_MIN_RANGE_DB = 10.0  # a level spread under this is a steady sound, not speech
_SPEECH_MARGIN_DB = 8.0  # a frame this far above the noise floor stands out of it
_MIN_SPEECH_FRAMES = 2  # one loud frame is a click, not a word


def frame_levels_db(samples: npt.NDArray[np.int16]) -> npt.NDArray[np.float32]:
    """RMS level in dBFS of each complete 20 ms frame of `samples` (-120 for silence)."""
    count = len(samples) // FRAME_SAMPLES
    frames = samples[: count * FRAME_SAMPLES].reshape(count, FRAME_SAMPLES).astype(np.float32)
    mean_square = np.einsum("ij,ij->i", frames, frames) / np.float32(FRAME_SAMPLES * 32768.0**2)
    levels: npt.NDArray[np.float32] = np.maximum(
        10 * np.log10(mean_square + np.float32(1e-12)), np.float32(_MIN_DB)
    )
    return levels


@dataclass(frozen=True)
class Thresholds:
    """The recording's levels so far, in dBFS: what is noise, what is speech, where to cut."""

    speech_db: float
    floor_db: float
    quiet_below_db: float
    has_speech: bool
    speech_above_db: float = _MIN_SPEECH_DB  # frames at or above this are speech

    def for_chunk(self, levels_db: npt.NDArray[np.float32]) -> Thresholds:
        """These thresholds with the speech level (and so the quiet threshold) of one chunk."""
        speech = levels_db[levels_db >= self.speech_above_db]
        if len(speech) < _MIN_SPEECH_FRAMES:
            return self
        speech_db = float(np.percentile(speech, 95))
        return replace(
            self, speech_db=speech_db, quiet_below_db=_quiet_below(self.floor_db, speech_db)
        )


def _quiet_below(floor_db: float, speech_db: float) -> float:
    """max(floor + 6, speech - 35), never above the midpoint of floor and speech."""
    return min(max(floor_db + 6.0, speech_db - 35.0), (floor_db + speech_db) / 2)


class LevelHistogram:
    """Counts of frame levels in 0.5 dB bins from -120 to 0 dBFS."""

    def __init__(self) -> None:
        self._counts = np.zeros(_BINS, dtype=np.int64)

    def add(self, levels_db: npt.NDArray[np.float32]) -> None:
        """Count these frame levels."""
        bins = np.clip(((levels_db - _MIN_DB) / _BIN_DB).astype(np.int64), 0, _BINS - 1)
        self._counts += np.bincount(bins, minlength=_BINS)

    def percentile_db(self, share: float, *, above_db: float = _MIN_DB) -> float:
        """The level below which `share` (0-1) of the counted frames at or above `above_db`
        lie; -120 if there are none."""
        counts = self._counts[_bin_of(above_db) :]
        total = int(counts.sum())
        if total == 0:
            return _MIN_DB
        rank = max(1, math.ceil(share * total))
        index = int(np.searchsorted(np.cumsum(counts), rank))
        return _MIN_DB + (index + _bin_of(above_db)) * _BIN_DB

    def count_at_or_above(self, level_db: float) -> int:
        """Frames counted at or above `level_db` (to the bin)."""
        return int(self._counts[_bin_of(level_db) :].sum())

    def thresholds(self) -> Thresholds:
        """Noise floor, speech level and the quiet threshold from the frames counted so far."""
        floor_db = max(self.percentile_db(0.05), _FLOOR_CLAMP_DB)
        speech_above_db = max(floor_db + _SPEECH_MARGIN_DB, _MIN_SPEECH_DB)
        has_speech = self.count_at_or_above(speech_above_db) >= _MIN_SPEECH_FRAMES
        above_db = speech_above_db if has_speech else _MIN_DB
        speech_db = self.percentile_db(0.95, above_db=above_db)
        quiet_db = _quiet_below(floor_db, speech_db)
        return Thresholds(speech_db, floor_db, quiet_db, has_speech, speech_above_db)


def _bin_of(level_db: float) -> int:
    """The histogram bin holding `level_db`."""
    return min(max(math.ceil((level_db - _MIN_DB) / _BIN_DB), 0), _BINS - 1)


def _runs(mask: npt.NDArray[np.bool_]) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """Start and end (exclusive) indices of the runs of True in `mask`."""
    edges = np.diff(np.concatenate([[0], mask.astype(np.int8), [0]]))
    return np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)


def choose_cut(
    levels_db: npt.NDArray[np.float32],
    *,
    first_frame: int,
    start_sample: int,
    limit_sample: int,
    quiet_below_db: float,
    min_pause_ms: int,
) -> int:
    """Absolute sample index to end a chunk that starts at `start_sample` and may not pass
    `limit_sample`; `levels_db[i]` is the level of frame `first_frame + i`."""
    window_start = start_sample + math.ceil((1 - WINDOW_SHARE) * (limit_sample - start_sample))
    lo = -(-window_start // FRAME_SAMPLES)  # first frame wholly inside the window
    hi = limit_sample // FRAME_SAMPLES  # frames before this one end by the limit
    window = levels_db[lo - first_frame : hi - first_frame]
    if len(window) == 0:
        return limit_sample
    starts, ends = _runs(window < quiet_below_db)
    lengths = ends - starts
    min_frames = math.ceil(min_pause_ms / FRAME_MS)
    if len(lengths) and lengths.max() >= min_frames:
        best = len(lengths) - 1 - int(np.argmax(lengths[::-1]))  # the later one on a tie
        middle_frame_x2 = 2 * lo + starts[best] + ends[best]
        return int(middle_frame_x2 * FRAME_SAMPLES // 2)
    quietest = len(window) - 1 - int(np.argmin(window[::-1]))
    return (lo + quietest) * FRAME_SAMPLES + FRAME_SAMPLES // 2


def count_speech_frames(levels_db: npt.NDArray[np.float32], *, speech_above_db: float) -> int:
    """Frames at or above the speech threshold."""
    return int(np.count_nonzero(levels_db >= speech_above_db))


def is_silent(levels_db: npt.NDArray[np.float32], thresholds: Thresholds) -> bool:
    """True when no two of these frames rise clearly above the noise floor."""
    if not thresholds.has_speech:
        return True
    speech = count_speech_frames(levels_db, speech_above_db=thresholds.speech_above_db)
    return speech < _MIN_SPEECH_FRAMES


def is_steady_sound(thresholds: Thresholds) -> bool:
    """True for audible sound whose level hardly varies (a tone, hum, noise): no speech."""
    spread_db = thresholds.speech_db - thresholds.floor_db
    return thresholds.speech_db >= _MIN_SPEECH_DB and spread_db < _MIN_RANGE_DB
