"""One reading of the quality figures, as `medasr quality` and the Quality page ask for it.

Each reading first measures the reviewed notes that have no figures yet (notes reviewed
before medasr measured them), then reads the period and the one before it. Reading
figures is not access to patient data: no audit event (an export is the face's).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from service.contract import is_supported_language
from storage import clock
from storage.accuracy_records import AccuracyFilter
from storage.review_interface import ReviewStore
from tasks.errors import QualityOptionInvalid
from tasks.review.corrections import Correction, recurring_corrections
from tasks.review.group_quality import (
    GROUPINGS,
    GroupQuality,
    groups_of,
    merged_sums,
    previous_period,
    sums_of,
)
from tasks.review.measured_notes import measure_earlier_reviews
from tasks.review.quality_series import (
    AccuracyPoint,
    HistogramBin,
    accuracy_histogram,
    accuracy_points,
)

_MAX_COLUMN_CHARS = 64
# The Quality page's corrections come from the newest corrected notes of the period: an
# alignment per note, so a bound keeps the page quick over years of notes.
PAGE_CORRECTED_NOTES = 2_000


@dataclass(frozen=True)
class QualityQuestion:
    """What a reader asks: a grouping, a period, a language, the smallest group shown."""

    by: str | None = None
    selection: AccuracyFilter = field(default_factory=AccuracyFilter)
    min_notes: int = 1


def checked_grouping(by: str | None) -> str | None:
    """`by` if it names a grouping or a manifest column; raises QualityOptionInvalid."""
    if by is None or by in GROUPINGS:
        return by
    if not by.strip() or len(by) > _MAX_COLUMN_CHARS or by == "path" or not by.isprintable():
        known = "|".join(GROUPINGS)
        raise QualityOptionInvalid(
            f"--by takes {known} or a manifest column name (up to 64 characters, not path); "
            f"got {by[:40]!r}"
        )
    return by


def checked_language(language: str | None) -> str | None:
    """`language` if the service knows it; raises QualityOptionInvalid."""
    if language is not None and not is_supported_language(language):
        raise QualityOptionInvalid(f"unsupported language {language[:16]!r}")
    return language


def read_quality(store: ReviewStore, question: QualityQuestion) -> list[GroupQuality]:
    """Each group's figures over the period, with the previous period's accuracy.

    The database sums the notes per author, department, language, reviewer or month; a
    manifest column's value is read from each note's recording (slower: every note)."""
    _measure_earlier(store)
    earlier = previous_period(question.selection, now=clock.host_now())
    with store.unit_of_work(read_only=True) as uow:
        if question.by is None or question.by in GROUPINGS:
            keys = [] if question.by is None else [question.by]
            sums = uow.accuracy.group_sums(question.selection, keys=keys)
            before = [] if earlier is None else uow.accuracy.group_sums(earlier, keys=keys)
            return groups_of(sums, min_notes=question.min_notes, previous=before)
        rows = uow.accuracy.note_figures(question.selection, metadata_column=question.by)
        earlier_rows = (
            []
            if earlier is None
            else uow.accuracy.note_figures(earlier, metadata_column=question.by)
        )
    return groups_of(
        sums_of(rows, by=question.by),
        min_notes=question.min_notes,
        previous=sums_of(earlier_rows, by=question.by),
    )


def read_corrections(
    store: ReviewStore, question: QualityQuestion, *, top: int
) -> list[Correction]:
    """The recurring substitutions of the period's notes whose texts are still kept."""
    _measure_earlier(store)
    with store.unit_of_work(read_only=True) as uow:
        notes = uow.accuracy.corrected_notes(question.selection)
    return recurring_corrections(notes, by=question.by, top=top)


@dataclass(frozen=True)
class QualityOverview:
    """The Quality page: the table, the chart's points, the histogram, the corrections."""

    groups: list[GroupQuality]
    points: list[AccuracyPoint]
    histogram: list[HistogramBin]
    corrections: list[Correction]


def read_overview(store: ReviewStore, question: QualityQuestion, *, top: int) -> QualityOverview:
    """Everything the Quality page shows, grouped by `question.by` (department or language)."""
    by = question.by or "department"
    _measure_earlier(store)
    earlier = previous_period(question.selection, now=clock.host_now())
    with store.unit_of_work(read_only=True) as uow:
        monthly = uow.accuracy.group_sums(question.selection, keys=[by, "month"])
        before = [] if earlier is None else uow.accuracy.group_sums(earlier, keys=[by])
        bins = uow.accuracy.group_sums(question.selection, keys=["bin"])
        corrected = uow.accuracy.corrected_notes(question.selection, limit=PAGE_CORRECTED_NOTES)
    groups = groups_of(merged_sums(monthly), min_notes=question.min_notes, previous=before)
    shown = {group.group for group in groups}
    points = [point for point in accuracy_points(monthly) if point.series in shown]
    return QualityOverview(
        groups=groups,
        points=points,
        histogram=accuracy_histogram(bins),
        corrections=recurring_corrections(corrected, by=None, top=top),
    )


def _measure_earlier(store: ReviewStore) -> None:
    with store.unit_of_work() as uow:
        measure_earlier_reviews(uow.accuracy)
