"""Reviewed notes' word figures (`uow.accuracy`): one row per note, its latest decision.

The row holds counts, the reviewer, and the note's language, author and department
(the grouping names a purge must not take away); never a word of the note. The
corrections (which words were changed into which) are read from the texts while the
store still keeps them (`corrected_notes`): a purge removes the texts and with them
those pairs, and keeps the figures.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, String, and_, case, cast, delete, func, select
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import UnaryExpression
from sqlalchemy.sql.operators import custom_op

from storage.accuracy_records import (
    AccuracyFilter,
    CorrectedNote,
    GroupSums,
    NoteAccuracy,
    Standing,
)
from storage.models import Item, NoteAccuracyRow
from storage.queries import items_where
from storage.records import ItemRecord

_TABLE = NoteAccuracyRow.__table__
_ERRORS = _TABLE.c.substitutions + _TABLE.c.deletions + _TABLE.c.insertions
# CorrectedNote's fields read from the figures.
_NOTE_COLUMNS = ("item_id", "language", "author", "department", "reviewer", "reviewed_at")
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

    def group_sums(self, selection: AccuracyFilter, *, keys: Sequence[str]) -> list[GroupSums]:
        """The selected notes' sums per value of `keys` (author, department, language,
        reviewer, month, bin: the accuracy histogram's bin number), summed by the database."""
        columns = [self._key_column(key).label(f"k{n}") for n, key in enumerate(keys)]
        errors = _TABLE.c.substitutions + _TABLE.c.deletions + _TABLE.c.insertions
        words = _TABLE.c.words
        query = (
            select(
                *columns,
                func.count(),
                func.sum(words),
                func.sum(_TABLE.c.substitutions),
                func.sum(_TABLE.c.deletions),
                func.sum(_TABLE.c.insertions),
                func.sum(case((errors > 0, 1), else_=0)),
                func.sum(errors * errors),
                func.sum(errors * words),
                func.sum(words * words),
            )
            .where(_selected(selection))
            .group_by(*columns)
        )
        found = []
        for row in self._session.execute(query):
            key, sums = tuple(row[: len(keys)]), [int(v or 0) for v in row[len(keys) :]]
            found.append(GroupSums(tuple(None if k is None else str(k) for k in key), *sums))
        return found

    def _key_column(self, key: str) -> ColumnElement[Any]:
        sqlite = self._session.get_bind().dialect.name == "sqlite"
        if key == "month":
            if not sqlite:
                return func.to_char(func.timezone("UTC", _TABLE.c.reviewed_at), "YYYY-MM")
            # SQLite keeps a UTC time as "YYYY-MM-DD HH:MM:SS.ffffff": its first seven
            # characters are the month, read without strftime parsing every row's time.
            return func.substr(_TABLE.c.reviewed_at, 1, 7)
        if key == "bin":  # the histogram's: 0 below 0.80, 1-10 steps of 0.02, 11 exactly 1.0
            steps = [(_TABLE.c.accuracy >= 1.0, 11), (_TABLE.c.accuracy < 0.80, 0)]
            steps += [(_TABLE.c.accuracy < round(0.80 + 0.02 * n, 2), n) for n in range(1, 11)]
            return case(*steps, else_=10)
        column: ColumnElement[Any] = _TABLE.c[key]
        if sqlite and key in _GROUP_COLUMNS:
            # SQLite's unary + (a no-op on any value) keeps its planner from walking the
            # (column, reviewed_at) index to group: a lookup into the table for every
            # note, twice as slow as reading the table and sorting the groups.
            return UnaryExpression(column, operator=custom_op("+"), type_=column.type)
        return column

    def standings(self, *, window_notes: int) -> list[Standing]:
        """Each author's, department's and language's reviewed count and newest window."""
        found = []
        for name, column in _GROUP_COLUMNS.items():
            newest = func.row_number().over(
                partition_by=column,
                order_by=(_TABLE.c.reviewed_at.desc(), _TABLE.c.item_id.desc()),
            )
            errors = _TABLE.c.substitutions + _TABLE.c.deletions + _TABLE.c.insertions
            ranked = (
                select(
                    column.label("value"),
                    _TABLE.c.words,
                    errors.label("errors"),
                    newest.label("rank"),
                )
                .where(column.is_not(None))
                .subquery()
            )
            window = ranked.c.rank <= window_notes
            query = select(
                ranked.c.value,
                func.count(),
                func.sum(case((window, ranked.c.words), else_=0)),
                func.sum(case((window, ranked.c.errors), else_=0)),
            ).group_by(ranked.c.value)
            found += [
                Standing(name, value, int(count), int(words or 0), int(errors or 0))
                for value, count, words, errors in self._session.execute(query)
            ]
        return found

    def corrected_notes(self, selection: AccuracyFilter, *, limit: int = 0) -> list[CorrectedNote]:
        """Finalized notes of the selection with a word changed whose texts are still kept
        (the newest `limit` of them, oldest first; 0: all)."""
        # Rows, not ORM objects: the Quality page reads 2,000 of them a view.
        query = (
            select(
                *(_TABLE.c[name] for name in _NOTE_COLUMNS),
                Item.machine_text,
                Item.text,
                Item.item_metadata,
            )
            .join(Item, Item.id == NoteAccuracyRow.item_id)
            .where(
                _selected(selection),
                NoteAccuracyRow.revision > 0,
                # A note signed off without a word changed has no correction to read.
                _ERRORS > 0,
                Item.machine_text.is_not(None),
                Item.text.is_not(None),
            )
            .order_by(NoteAccuracyRow.reviewed_at.desc(), NoteAccuracyRow.item_id.desc())
        )
        if limit:
            query = query.limit(limit)
        found = [
            CorrectedNote(
                item_id=row.item_id,
                language=row.language,
                author=row.author,
                department=row.department,
                reviewer=row.reviewer,
                reviewed_at=row.reviewed_at,
                metadata=dict(row.item_metadata or {}),
                machine_text=row.machine_text or "",
                final_text=row.text or "",
            )
            for row in self._session.execute(query)
        ]
        return found[::-1]

    def unmeasured_reviews(self, *, limit: int) -> list[ItemRecord]:
        """Done recordings a person signed off or accepted, without figures yet."""
        # NOT IN over the figures' keys, not a NOT EXISTS per recording: one pass over
        # the key column instead of a lookup for each of 10^5 done recordings (twice as
        # quick on SQLite; every reading of the figures asks this first).
        measured = Item.id.not_in(select(NoteAccuracyRow.item_id))
        reviewed = Item.machine_text.is_not(None) | cast(Item.extras, String).contains(
            '"review"', autoescape=True
        )
        condition = and_(Item.status == "done", measured, reviewed)
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
