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
from collections.abc import Callable, Iterable
from dataclasses import astuple, dataclass
from datetime import datetime, timedelta

from storage.accuracy_records import AccuracyFilter, GroupSums, NoteAccuracy

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


def sums_of(rows: Iterable[tuple[NoteAccuracy, str | None]], *, by: str | None) -> list[GroupSums]:
    """The notes' sums per group, as the database sums them (`uow.accuracy.group_sums`)."""
    key = group_key(by)
    sums: dict[str, list[int]] = {}
    for note, column in rows:
        entry = sums.setdefault(key(note, column), [0] * 9)
        errors = note.errors
        for n, value in enumerate((
            1, note.words, note.substitutions, note.deletions, note.insertions,
            1 if errors else 0, errors * errors, errors * note.words, note.words * note.words,
        )):  # fmt: skip
            entry[n] += value
    return [GroupSums((name,), *values) for name, values in sums.items()]


def merged_sums(sums: Iterable[GroupSums]) -> list[GroupSums]:
    """Sums keyed (group, month, ...) added up per group: the page reads its groups' table
    from the monthly sums its chart needs, one scan of the notes for both."""
    merged: dict[str | None, list[int]] = {}
    for group in sums:
        entry = merged.setdefault(group.key[0], [0] * 9)
        for n, value in enumerate(astuple(group)[1:]):
            entry[n] += value
    return [GroupSums((name,), *values) for name, values in merged.items()]


def groups_of(
    sums: Iterable[GroupSums], *, min_notes: int = 1, previous: Iterable[GroupSums] = ()
) -> list[GroupQuality]:
    """Each group's figures from its sums, by group name, with the previous period's."""
    before = {_name(group.key): _figures(_name(group.key), group).accuracy for group in previous}
    found = [
        _figures(_name(group.key), group, previous_accuracy=before.get(_name(group.key)))
        for group in sums
        if group.notes >= min_notes
    ]
    return sorted(found, key=lambda group: group.group)


def previous_period(selection: AccuracyFilter, *, now: datetime) -> AccuracyFilter | None:
    """The period of the same length just before the selection's; None without a start,
    for a selection that ends before it starts, or one whose period before would begin
    before the calendar does."""
    if selection.since is None:
        return None
    length = (selection.until or now) - selection.since
    calendar_start = datetime.min.replace(tzinfo=selection.since.tzinfo)
    if length <= timedelta(0) or selection.since - calendar_start < length:
        return None
    return AccuracyFilter(
        since=selection.since - length, until=selection.since, language=selection.language
    )


def _name(key: tuple[str | None, ...]) -> str:
    if not key:
        return ALL_GROUP
    return key[0] if key[0] else NONE_GROUP


def _figures(name: str, sums: GroupSums, *, previous_accuracy: float | None = None) -> GroupQuality:
    errors = sums.substitutions + sums.deletions + sums.insertions
    accuracy = None if sums.words == 0 else max(0.0, 1.0 - errors / sums.words)
    low, high = _interval(sums, errors=errors)
    return GroupQuality(
        group=name,
        notes=sums.notes,
        words=sums.words,
        substitutions=sums.substitutions,
        deletions=sums.deletions,
        insertions=sums.insertions,
        changed_notes=sums.changed,
        accuracy=accuracy,
        ci_low=low,
        ci_high=high,
        previous_accuracy=previous_accuracy,
    )


def _interval(sums: GroupSums, *, errors: int) -> tuple[float | None, float | None]:
    """Σ(e − R·w)² = Σe² − 2R·Σe·w + R²·Σw²: the interval from the sums alone."""
    count, words = sums.notes, sums.words
    if count < 2 or words == 0:
        return None, None
    rate = errors / words
    spread = sums.errors_sq - 2 * rate * sums.errors_words + rate * rate * sums.words_sq
    half = _Z95 * math.sqrt(count / (count - 1) * max(0.0, spread)) / words
    return max(0.0, 1.0 - rate - half), min(1.0, max(0.0, 1.0 - rate + half))
