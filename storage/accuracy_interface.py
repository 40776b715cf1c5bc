"""The store's reviewed-note figures as the review and quality code sees them (`uow.accuracy`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from storage.accuracy_records import (
    AccuracyFilter,
    CorrectedNote,
    GroupSums,
    NoteAccuracy,
    Standing,
)
from storage.records import ItemRecord

__all__ = ["AccuracyRepository"]


class AccuracyRepository(Protocol):
    """One row of figures per reviewed note; never any of its text."""

    def record_accuracy(self, figures: NoteAccuracy) -> NoteAccuracy:
        """Keep a note's figures (replacing an earlier decision's)."""
        ...

    def note_figures(
        self, selection: AccuracyFilter, *, metadata_column: str | None = None
    ) -> list[tuple[NoteAccuracy, str | None]]:
        """The figures of the notes selected, oldest first, each with its manifest
        `metadata_column` value (None when not asked for, or gone with a purge)."""
        ...

    def group_sums(self, selection: AccuracyFilter, *, keys: Sequence[str]) -> list[GroupSums]:
        """The selected notes' sums per value of `keys` (author, department, language,
        reviewer, month, bin), summed by the database."""
        ...

    def standings(self, *, window_notes: int) -> list[Standing]:
        """Every author's, department's and language's count of reviewed notes, and the
        words and errors of their newest `window_notes`."""
        ...

    def corrected_notes(self, selection: AccuracyFilter, *, limit: int = 0) -> list[CorrectedNote]:
        """Finalized notes of the selection with a word changed (errors > 0) whose machine
        and final texts are still kept (the newest `limit`, oldest first; 0: all)."""
        ...

    def unmeasured_reviews(self, *, limit: int) -> list[ItemRecord]:
        """Reviewed recordings (done, signed off or accepted) without figures yet."""
        ...
