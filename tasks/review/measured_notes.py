"""A reviewed note's figures kept in the store: at the decision, and for earlier reviews.

`record_finalized` and `record_accepted` run inside the decision's unit of work
(tasks/review/decisions.py), so a note is never finalized without its figures.
`measure_earlier_reviews` gives the notes reviewed before medasr measured them their
figures, from the texts still kept (a purged note has none left to measure): the
reviewer and time of the sign-off come from the note's review record.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

from storage.accuracy_interface import AccuracyRepository
from storage.accuracy_records import NoteAccuracy
from storage.records import ItemRecord
from tasks.review.word_accuracy import WordFigures, accepted_figures, measure_words

_BATCH = 500


def record_finalized(
    accuracy: AccuracyRepository, item: ItemRecord, *, revision: int, reviewer: str
) -> NoteAccuracy:
    """A signed-off note: its machine text against its final text."""
    figures = measure_words(item.machine_transcript, item.text or "", language=item.language)
    return accuracy.record_accuracy(_note(item, figures, revision=revision, reviewer=reviewer))


def record_accepted(
    accuracy: AccuracyRepository, item: ItemRecord, *, reviewer: str
) -> NoteAccuracy:
    """A note accepted as it is: every word read, none changed."""
    figures = accepted_figures(item.text or "", language=item.language)
    return accuracy.record_accuracy(_note(item, figures, revision=0, reviewer=reviewer))


def measure_earlier_reviews(accuracy: AccuracyRepository, *, max_notes: int = 100_000) -> int:
    """Figures for reviewed notes that have none yet; returns how many were measured."""
    measured = 0
    while measured < max_notes:
        items = accuracy.unmeasured_reviews(limit=min(_BATCH, max_notes - measured))
        for item in items:
            review: dict[str, Any] = item.extras.get("review") or {}
            reviewer = str(review.get("by") or "unknown")
            at = _reviewed_at(review, item)
            if item.machine_text is not None:
                figures = measure_words(item.machine_text, item.text or "", language=item.language)
                revision = int(review.get("revision") or 1)
            else:
                figures, revision = accepted_figures(item.text or "", language=item.language), 0
            note = _note(item, figures, revision=revision, reviewer=reviewer)
            accuracy.record_accuracy(dataclasses.replace(note, reviewed_at=at))
        measured += len(items)
        if len(items) < _BATCH:
            break
    return measured


def _note(item: ItemRecord, figures: WordFigures, *, revision: int, reviewer: str) -> NoteAccuracy:
    return NoteAccuracy(
        item_id=item.id,
        revision=revision,
        reviewer=reviewer,
        reviewed_at=item.updated_at,
        language=item.language,
        author=item.metadata.get("author"),
        department=item.metadata.get("department"),
        words=figures.words,
        substitutions=figures.substitutions,
        deletions=figures.deletions,
        insertions=figures.insertions,
        accuracy=figures.accuracy,
    )


def _reviewed_at(review: dict[str, Any], item: ItemRecord) -> datetime:
    """When the review was signed off (its record's time), else the note's last change."""
    try:
        at = datetime.fromisoformat(str(review.get("at") or review.get("accepted_at")))
    except ValueError:
        return item.updated_at
    return at if at.tzinfo is not None else item.updated_at
