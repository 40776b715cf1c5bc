"""What the Quality page plots: accuracy per group and month, and notes by accuracy.

Each point is a group's word-weighted accuracy over the notes reviewed in one month
(UTC), as `medasr quality --by GROUP` would give for that month alone. Both are built
from the sums the database makes (`uow.accuracy.group_sums`), not from every note. The histogram
counts notes by their own accuracy in bins of 0.02 from 0.80 up, everything below 0.80
in one bin and a note left unchanged (1.0) in its own.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from storage.accuracy_records import GroupSums
from tasks.review.group_quality import NONE_GROUP

_HISTOGRAM_FLOOR = 0.80
_HISTOGRAM_STEP = 0.02
_STEPS = 10  # bins of 0.02 from 0.80 to 1.0 (uow.accuracy.group_sums numbers them 1-10)


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


def accuracy_points(sums: Iterable[GroupSums]) -> list[AccuracyPoint]:
    """Each group's accuracy per month, by group then month, from sums keyed (group, month)."""
    points = [
        AccuracyPoint(
            group or NONE_GROUP,
            month or "",
            _accuracy(s.words, s.substitutions + s.deletions + s.insertions),
            s.notes,
            s.words,
        )
        for s in sums
        for group, month in [s.key]
    ]
    return sorted(points, key=lambda point: (point.series, point.month))


def accuracy_histogram(sums: Iterable[GroupSums]) -> list[HistogramBin]:
    """Notes counted by accuracy from sums keyed by bin number: 0 below 0.80, 1-10 steps
    of 0.02, 11 exactly 1.0."""
    counts = [0] * (_STEPS + 2)
    for group in sums:
        counts[int(group.key[0] or 0)] += group.notes
    bins = [HistogramBin(f"< {_HISTOGRAM_FLOOR:.2f}", 0.0, _HISTOGRAM_FLOOR, counts[0])]
    for step in range(_STEPS):
        low = round(_HISTOGRAM_FLOOR + step * _HISTOGRAM_STEP, 2)
        high = round(low + _HISTOGRAM_STEP, 2)
        bins.append(HistogramBin(f"{low:.2f}", low, high, counts[1 + step]))
    bins.append(HistogramBin("1.00", 1.0, 1.0, counts[-1]))
    return bins


def _accuracy(words: int, errors: int) -> float:
    if words == 0:
        return 1.0 if errors == 0 else 0.0
    return max(0.0, 1.0 - errors / words)
