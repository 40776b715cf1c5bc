"""Reviewed notes with known texts and manifest columns, for the quality tests."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from storage.accuracy_records import AccuracyFilter, NoteAccuracy
from storage.review_interface import ReviewStore
from tasks.review.decisions import accept_as_is, finalize
from tests.helpers.review import Segment, add_transcribed


def add_reviewed(
    store: ReviewStore,
    uri: str,
    *,
    machine: str,
    final: str | None,
    metadata: Mapping[str, str] = {},
    reviewer: str = "ann",
    language: str = "en-IN",
) -> int:
    """A recording transcribed as `machine`, then finalized as `final` (None: accepted)."""
    item_id = add_transcribed(
        store,
        uri,
        segments=[Segment(0, 1000, machine)],
        language=language,
        sha256=hashlib.sha256(uri.encode()).hexdigest(),
    )
    with store.unit_of_work() as uow:
        if metadata:
            uow.items.set_item_metadata({uri: dict(metadata)}, language=language)
        if final is None:
            accept_as_is(uow, item_id=item_id, author=reviewer, base_revision=0)
        else:
            finalize(uow, item_id=item_id, text=final, author=reviewer, base_revision=0)
    return item_id


def note_figures(store: ReviewStore) -> dict[int, NoteAccuracy]:
    """Every note's stored figures by item id."""
    with store.unit_of_work(read_only=True) as uow:
        return {note.item_id: note for note, _ in uow.accuracy.note_figures(AccuracyFilter())}
