"""Reviewed notes' accuracy by group: what `medasr quality` and the Quality page show.

A group's word accuracy is word-weighted: 1 - (its errors) / (its final words), so a
long note counts for its words and a group's figure is the one its notes add up to.
Its 95 % confidence interval treats the notes as the sample (a ratio estimator with
notes as clusters, Cochran 1977 §6): with R = errors / words and d_i = e_i - R·w_i for
each note, var(R) = n / (n - 1) · Σ d_i² / (Σ w_i)², and the interval is
1 - R ± 1.96 · √var(R), clipped to [0, 1]. A group of one note has none; a few notes
give a wide one, which is the point (a group of 3 notes is not a finding).
The previous period is the same length just before `since`; its accuracy, per group,
gives the change (in accuracy, 0.01 = one point).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from storage.accuracy_records import AccuracyFilter, NoteAccuracy

GROUPINGS = ("author", "department", "language", "reviewer", "month")
NONE_GROUP = "(none)"
ALL_GROUP = "all"
_Z95 = 1.959964


@dataclass(frozen=True)
class GroupQuality:
    """One group's reviewed notes, in figures."""

    group: str
    notes: int
    words: int
    substitutions: int
    deletions: int
    insertions: int
    changed_notes: int
    accuracy: float | None  # None: no final words in the group
    ci_low: float | None
    ci_high: float | None
    previous_accuracy: float | None = None

    @property
    def errors(self) -> int:
        """Words changed, missed or removed."""
        return self.substitutions + self.deletions + self.insertions

    @property
    def changed_share(self) -> float:
        """The share of notes with any word changed."""
        return self.changed_notes / self.notes if self.notes else 0.0

    @property
    def change(self) -> float | None:
        """Accuracy against the previous period's (None without one)."""
        if self.accuracy is None or self.previous_accuracy is None:
            return None
        return self.accuracy - self.previous_accuracy


def group_key(by: str | None) -> Callable[[NoteAccuracy, str | None], str]:
    """How a note is named in a grouping: by a figure's own column, the month it was
    reviewed (UTC), or the manifest column's value handed along with it."""
    if by is None:
        return lambda note, column: ALL_GROUP
    if by == "month":
        return lambda note, column: note.reviewed_at.strftime("%Y-%m")
    if by in ("author", "department", "language", "reviewer"):
        return lambda note, column: getattr(note, by) or NONE_GROUP
    return lambda note, column: column or NONE_GROUP


def summarize_groups(
    rows: Iterable[tuple[NoteAccuracy, str | None]],
    *,
    by: str | None,
    min_notes: int = 1,
    previous: Iterable[tuple[NoteAccuracy, str | None]] = (),
) -> list[GroupQuality]:
    """Each group's figures (groups under `min_notes` notes left out), by group name."""
    key = group_key(by)
    groups: dict[str, list[NoteAccuracy]] = {}
    for note, column in rows:
        groups.setdefault(key(note, column), []).append(note)
    before: dict[str, list[NoteAccuracy]] = {}
    for note, column in previous:
        before.setdefault(key(note, column), []).append(note)
    found = []
    for name in sorted(groups):
        notes = groups[name]
        if len(notes) < min_notes:
            continue
        earlier = _figures(name, before[name]).accuracy if name in before else None
        found.append(_with_previous(_figures(name, notes), earlier))
    return found


def previous_period(selection: AccuracyFilter, *, now: datetime) -> AccuracyFilter | None:
    """The period of the same length just before the selection's (None without a start)."""
    if selection.since is None:
        return None
    length = (selection.until or now) - selection.since
    return AccuracyFilter(
        since=selection.since - length, until=selection.since, language=selection.language
    )


def _figures(name: str, notes: Sequence[NoteAccuracy]) -> GroupQuality:
    words = sum(note.words for note in notes)
    errors = sum(note.errors for note in notes)
    accuracy = None if words == 0 else max(0.0, 1.0 - errors / words)
    low, high = _interval(notes, words=words, errors=errors)
    return GroupQuality(
        group=name,
        notes=len(notes),
        words=words,
        substitutions=sum(note.substitutions for note in notes),
        deletions=sum(note.deletions for note in notes),
        insertions=sum(note.insertions for note in notes),
        changed_notes=sum(1 for note in notes if note.errors),
        accuracy=accuracy,
        ci_low=low,
        ci_high=high,
    )


def _interval(
    notes: Sequence[NoteAccuracy], *, words: int, errors: int
) -> tuple[float | None, float | None]:
    count = len(notes)
    if count < 2 or words == 0:
        return None, None
    rate = errors / words
    spread = sum((note.errors - rate * note.words) ** 2 for note in notes)
    half = _Z95 * math.sqrt(count / (count - 1) * spread) / words
    return max(0.0, 1.0 - rate - half), min(1.0, max(0.0, 1.0 - rate + half))


def _with_previous(group: GroupQuality, previous_accuracy: float | None) -> GroupQuality:
    if previous_accuracy is None:
        return group
    return GroupQuality(**{**group.__dict__, "previous_accuracy": previous_accuracy})
