"""What the Quality page plots: accuracy per group and month, and notes by accuracy.

Each point is a group's word-weighted accuracy over the notes reviewed in one month
(UTC), as `medasr quality --by GROUP` would give for that month alone. The histogram
counts notes by their own accuracy in bins of 0.02 from 0.80 up, everything below 0.80
in one bin and a note left unchanged (1.0) in its own.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from storage.accuracy_records import NoteAccuracy
from tasks.review.group_quality import group_key

_HISTOGRAM_FLOOR = 0.80
_HISTOGRAM_STEP = 0.02


@dataclass(frozen=True)
class AccuracyPoint:
    """One group's accuracy in one month."""

    series: str
    month: str  # YYYY-MM
    accuracy: float
    notes: int
    words: int


@dataclass(frozen=True)
class HistogramBin:
    """Notes whose accuracy is in [low, high) (the last bin: exactly 1.0)."""

    label: str
    low: float
    high: float
    notes: int


def accuracy_points(
    rows: Iterable[tuple[NoteAccuracy, str | None]], *, by: str
) -> list[AccuracyPoint]:
    """Each group's accuracy per month, by group then month."""
    key = group_key(by)
    sums: dict[tuple[str, str], list[int]] = {}
    for note, column in rows:
        entry = sums.setdefault((key(note, column), note.reviewed_at.strftime("%Y-%m")), [0, 0, 0])
        entry[0] += 1
        entry[1] += note.words
        entry[2] += note.errors
    return [
        AccuracyPoint(series, month, _accuracy(words, errors), notes, words)
        for (series, month), (notes, words, errors) in sorted(sums.items())
    ]


def accuracy_histogram(notes: Iterable[NoteAccuracy]) -> list[HistogramBin]:
    """Notes counted by accuracy: below 0.80, steps of 0.02 up to 1.0, and exactly 1.0."""
    steps = round((1.0 - _HISTOGRAM_FLOOR) / _HISTOGRAM_STEP)
    counts = [0] * (steps + 2)
    for note in notes:
        if note.accuracy >= 1.0:
            counts[-1] += 1
        elif note.accuracy < _HISTOGRAM_FLOOR:
            counts[0] += 1
        else:
            step = int((note.accuracy - _HISTOGRAM_FLOOR) / _HISTOGRAM_STEP + 1e-9)
            counts[1 + min(step, steps - 1)] += 1
    bins = [HistogramBin(f"< {_HISTOGRAM_FLOOR:.2f}", 0.0, _HISTOGRAM_FLOOR, counts[0])]
    for step in range(steps):
        low = round(_HISTOGRAM_FLOOR + step * _HISTOGRAM_STEP, 2)
        high = round(low + _HISTOGRAM_STEP, 2)
        bins.append(HistogramBin(f"{low:.2f}", low, high, counts[1 + step]))
    bins.append(HistogramBin("1.00", 1.0, 1.0, counts[-1]))
    return bins


def _accuracy(words: int, errors: int) -> float:
    if words == 0:
        return 1.0 if errors == 0 else 0.0
    return max(0.0, 1.0 - errors / words)
