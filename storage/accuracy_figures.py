"""Reviewed notes' word figures (`uow.accuracy`): one row per note, its latest decision.

The row holds counts, the reviewer, and the note's language, author and department
(the grouping names a purge must not take away); never a word of the note. The
corrections (which words were changed into which) are read from the texts while the
store still keeps them (`corrected_notes`): a purge removes the texts and with them
those pairs, and keeps the figures.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, String, and_, cast, delete, func, select
from sqlalchemy.orm import Session

from storage.accuracy_records import AccuracyFilter, CorrectedNote, NoteAccuracy
from storage.models import Item, NoteAccuracyRow
from storage.queries import items_where
from storage.records import ItemRecord

_TABLE = NoteAccuracyRow.__table__
_GROUP_COLUMNS = {
    "author": NoteAccuracyRow.author,
    "department": NoteAccuracyRow.department,
    "language": NoteAccuracyRow.language,
}


class AccuracyFigures:
    """Figures of reviewed notes on one session."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def record_accuracy(self, figures: NoteAccuracy) -> NoteAccuracy:
        """Keep a note's figures, replacing an earlier decision's."""
        self._session.execute(
            delete(NoteAccuracyRow).where(NoteAccuracyRow.item_id == figures.item_id)
        )
        row = NoteAccuracyRow(**_fields(figures))
        self._session.add(row)
        self._session.flush()
        return _record(row)

    def note_figures(
        self, selection: AccuracyFilter, *, metadata_column: str | None = None
    ) -> list[tuple[NoteAccuracy, str | None]]:
        """The selected notes' figures, oldest first, each with a manifest column's value."""
        # Rows, not ORM objects: a quality report reads every note of its period.
        if metadata_column is None:
            query = select(_TABLE).where(_selected(selection)).order_by(_TABLE.c.reviewed_at)
            return [(_record(row), None) for row in self._session.execute(query)]
        joined = (
            select(_TABLE, Item.item_metadata.label("item_metadata"))
            .join(Item, Item.id == _TABLE.c.item_id)
            .where(_selected(selection))
            .order_by(_TABLE.c.reviewed_at)
        )
        return [
            (_record(row), (row.item_metadata or {}).get(metadata_column))
            for row in self._session.execute(joined)
        ]

    def recent_figures(self, *, column: str, value: str, limit: int) -> list[NoteAccuracy]:
        """The newest `limit` notes whose author, department or language is `value`."""
        rows = self._session.scalars(
            select(NoteAccuracyRow)
            .where(_GROUP_COLUMNS[column] == value)
            .order_by(NoteAccuracyRow.reviewed_at.desc(), NoteAccuracyRow.item_id.desc())
            .limit(limit)
        )
        return [_record(row) for row in rows]

    def reviewed_count(self, *, column: str, value: str) -> int:
        """How many notes of this author, department or language were ever reviewed."""
        found = self._session.scalar(
            select(func.count()).select_from(NoteAccuracyRow).where(_GROUP_COLUMNS[column] == value)
        )
        return int(found or 0)

    def corrected_notes(self, selection: AccuracyFilter) -> list[CorrectedNote]:
        """Finalized notes of the selection whose texts are still kept."""
        query = (
            select(NoteAccuracyRow, Item.machine_text, Item.text, Item.item_metadata)
            .join(Item, Item.id == NoteAccuracyRow.item_id)
            .where(
                _selected(selection),
                NoteAccuracyRow.revision > 0,
                Item.machine_text.is_not(None),
                Item.text.is_not(None),
            )
            .order_by(NoteAccuracyRow.reviewed_at, NoteAccuracyRow.item_id)
        )
        return [
            CorrectedNote(
                item_id=row.item_id,
                language=row.language,
                author=row.author,
                department=row.department,
                reviewer=row.reviewer,
                reviewed_at=row.reviewed_at,
                metadata=dict(metadata or {}),
                machine_text=machine_text or "",
                final_text=text or "",
            )
            for row, machine_text, text, metadata in self._session.execute(query)
        ]

    def unmeasured_reviews(self, *, limit: int) -> list[ItemRecord]:
        """Done recordings a person signed off or accepted, without figures yet."""
        measured = select(NoteAccuracyRow.item_id).where(NoteAccuracyRow.item_id == Item.id)
        reviewed = Item.machine_text.is_not(None) | cast(Item.extras, String).contains(
            '"review"', autoescape=True
        )
        condition = and_(Item.status == "done", reviewed, ~measured.exists())
        return items_where(self._session, condition, limit=limit)


def _selected(selection: AccuracyFilter) -> ColumnElement[bool]:
    conditions: list[ColumnElement[bool]] = [NoteAccuracyRow.item_id.is_not(None)]
    if selection.since is not None:
        conditions.append(NoteAccuracyRow.reviewed_at >= selection.since)
    if selection.until is not None:
        conditions.append(NoteAccuracyRow.reviewed_at < selection.until)
    if selection.language is not None:
        conditions.append(NoteAccuracyRow.language == selection.language)
    return and_(*conditions)


def _fields(figures: NoteAccuracy) -> dict[str, Any]:
    return {
        "item_id": figures.item_id,
        "revision": figures.revision,
        "reviewer": figures.reviewer,
        "reviewed_at": figures.reviewed_at,
        "language": figures.language,
        "author": figures.author,
        "department": figures.department,
        "words": figures.words,
        "substitutions": figures.substitutions,
        "deletions": figures.deletions,
        "insertions": figures.insertions,
        "accuracy": figures.accuracy,
    }


def _record(row: Any) -> NoteAccuracy:
    return NoteAccuracy(
        item_id=row.item_id,
        revision=row.revision,
        reviewer=row.reviewer,
        reviewed_at=row.reviewed_at,
        language=row.language,
        author=row.author,
        department=row.department,
        words=row.words,
        substitutions=row.substitutions,
        deletions=row.deletions,
        insertions=row.insertions,
        accuracy=row.accuracy,
    )
