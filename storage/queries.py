"""Reading items (`uow.item_queries`): by id, by source, pages, counts, exports, as plain records.

What status, export, delivery and the dry run read. Nothing here writes: registering
is storage/items.py's, claiming and settling storage/claims.py's. The module functions
(`items_where`, `uri_in`, `batches`) serve the other small repositories too.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, cast

from sqlalchemy import (
    ColumnElement,
    Row,
    Table,
    Text,
    and_,
    bindparam,
    func,
    literal,
    or_,
    select,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Session

from storage.models import Item
from storage.records import ExportRow, ItemRecord, SourceFile, StatusCount
from storage.registration import REGISTER_BATCH, find_unsettled

# Parameters per IN list: far under SQLite's 32,766 and psycopg's 65,535 limits.
IN_BATCH = 500
# PostgreSQL gets URIs as one array parameter, so its batches can be larger.
ARRAY_BATCH = 5000
ITEMS = cast(Table, Item.__table__)
# Asked once per file: built once (building it cost more than the indexed lookup).
_DONE_WITH_SHA = (
    select(ITEMS)
    .where(
        ITEMS.c.sha256 == bindparam("sha256"),
        ITEMS.c.language == bindparam("language"),
        ITEMS.c.status == "done",
    )
    .order_by(ITEMS.c.done_at.desc(), ITEMS.c.id.desc())
    .limit(1)
)


def batches(values: Sequence[Any], size: int = IN_BATCH) -> Iterator[Sequence[Any]]:
    """Consecutive slices of at most `size` values (for IN lists)."""
    for start in range(0, len(values), size):
        yield values[start : start + size]


def under_source(source_prefix: str) -> ColumnElement[bool]:
    """The source itself or anything below it (a folder boundary, not a name prefix)."""
    itself = source_prefix.rstrip("/") or source_prefix
    folder = source_prefix.rstrip("/") + "/"
    # substr, not LIKE: LIKE ignores ASCII case on SQLite and treats % and _ specially.
    below = func.substr(Item.source_uri, 1, len(folder)) == folder
    return or_(Item.source_uri == itself, below)


def uri_batch_size(session: Session) -> int:
    """URIs per batch: PostgreSQL gets them as one array parameter, so larger batches."""
    return ARRAY_BATCH if session.get_bind().dialect.name == "postgresql" else IN_BATCH


def uri_in(session: Session, uris: Sequence[str]) -> ColumnElement[bool]:
    """`source_uri IN (...)`; on PostgreSQL a semi-join on an array, so a planner with
    stale statistics (right after a bulk insert) hashes it instead of comparing every
    row with every URI."""
    if session.get_bind().dialect.name != "postgresql":
        return Item.source_uri.in_(uris)
    return Item.source_uri.in_(select(func.unnest(literal(list(uris), ARRAY(Text)))))


def items_where(
    session: Session,
    condition: ColumnElement[bool],
    *,
    order_by: Sequence[Any] = (),
    limit: int = 0,
) -> list[ItemRecord]:
    """Items matching `condition` as records (id order unless `order_by`)."""
    query = select(ITEMS).where(condition).order_by(*(order_by or (Item.id,)))
    if limit:
        query = query.limit(limit)
    return [_item_record(row) for row in session.execute(query)]


class ItemQueries:
    """Read-only queries of items on one session."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def _uri_batch_size(self) -> int:
        return uri_batch_size(self._session)

    def _uri_in(self, uris: Sequence[str]) -> ColumnElement[bool]:
        return uri_in(self._session, uris)

    def get_item(self, item_id: int) -> ItemRecord | None:
        """One item by id."""
        found = self._items_where(Item.id == item_id)
        return found[0] if found else None

    def find_item(self, *, source_uri: str, language: str) -> ItemRecord | None:
        """One item by its source URI and language."""
        found = self._items_where(and_(Item.source_uri == source_uri, Item.language == language))
        return found[0] if found else None

    def find_items(self, *, source_uris: Sequence[str], language: str) -> dict[str, ItemRecord]:
        """Items of `language` by source URI, many URIs per query (unknown ones left out)."""
        found: dict[str, ItemRecord] = {}
        for batch in batches(list(source_uris), self._uri_batch_size()):
            for item in self._items_where(and_(Item.language == language, self._uri_in(batch))):
                found[item.source_uri] = item
        return found

    def find_unsettled(
        self, files: Sequence[SourceFile], *, language: str, settled: Sequence[str]
    ) -> list[str]:
        """URIs of listed files that are new, changed or not in a `settled` status (one
        query per batch; no transcript is read)."""
        found: list[str] = []
        for batch in batches(list(files), REGISTER_BATCH):
            found += find_unsettled(self._session, batch, language=language, settled=settled)
        return found

    def done_items_page(
        self, *, language: str | None, after_id: int, limit: int, status: str = "done"
    ) -> list[ItemRecord]:
        """Up to `limit` items with `status` (of `language`) whose id is above `after_id`."""
        condition = and_(Item.status == status, Item.id > after_id)
        if language is not None:
            condition = and_(condition, Item.language == language)
        return self._items_where(condition, limit=limit)

    def find_done_with_sha(self, *, sha256: str, language: str) -> ItemRecord | None:
        """The latest done item with this content and language, if any."""
        row = self._session.execute(_DONE_WITH_SHA, {"sha256": sha256, "language": language})
        found = row.one_or_none()
        return None if found is None else _item_record(found)

    def status_counts(self) -> list[StatusCount]:
        """Items and known audio (ms) by status and language."""
        rows = self._session.execute(
            select(
                Item.status,
                Item.language,
                func.count(),
                func.coalesce(func.sum(Item.duration_ms), 0),
            )
            .group_by(Item.status, Item.language)
            .order_by(Item.language, Item.status)
        )
        return [StatusCount(s, lang, int(n), int(ms or 0)) for s, lang, n, ms in rows]

    def pending_count(self, *, language: str | None, source_prefix: str | None = None) -> int:
        """How many items wait to be claimed (of `language`, under `source_prefix`)."""
        query = select(func.count()).select_from(Item).where(Item.status == "pending")
        if language is not None:
            query = query.where(Item.language == language)
        if source_prefix is not None:
            query = query.where(under_source(source_prefix))
        return int(self._session.scalar(query) or 0)

    def list_failures(self, *, limit: int = 20) -> list[ItemRecord]:
        """The latest failed items, newest first."""
        return self.list_latest(status="failed", limit=limit)

    def list_latest(self, *, status: str, limit: int = 20) -> list[ItemRecord]:
        """The latest items with `status` (failed, skipped...), newest first."""
        return self._items_where(
            Item.status == status, order_by=(Item.updated_at.desc(), Item.id.desc()), limit=limit
        )

    def export_rows(
        self, *, status: str | None = None, language: str | None = None
    ) -> Iterator[ExportRow]:
        """Every item (or those with `status`, in `language`) sorted by source, streamed."""
        query = select(ITEMS).order_by(Item.source_uri, Item.language)
        if status is not None:
            query = query.where(Item.status == status)
        if language is not None:
            query = query.where(Item.language == language)
        for row in self._session.execute(query.execution_options(yield_per=1000)):
            yield _export_row(row)

    def export_keys(self) -> Iterator[tuple[str, str]]:
        """Every item's (source URI, language), oldest item first, streamed."""
        query = select(Item.source_uri, Item.language).order_by(Item.id)
        rows = self._session.execute(query.execution_options(yield_per=5000))
        yield from ((source_uri, language) for source_uri, language in rows)

    def source_uris(self) -> Iterator[str]:
        """Every item's source URI (all statuses and languages, duplicates possible), streamed."""
        query = select(Item.source_uri).execution_options(yield_per=5000)
        yield from self._session.scalars(query)

    def _items_where(
        self, condition: ColumnElement[bool], *, order_by: Sequence[Any] = (), limit: int = 0
    ) -> list[ItemRecord]:
        return items_where(self._session, condition, order_by=order_by, limit=limit)


def _item_record(row: Row[Any]) -> ItemRecord:
    values = row._asdict()
    values["extras"] = values["extras"] or {}
    values["flags"] = list(values["flags"] or [])
    values["metadata"] = values.get("metadata") or {}
    return ItemRecord(**values)


def _export_row(row: Row[Any]) -> ExportRow:
    return ExportRow(
        source=row.source_uri,
        language=row.language,
        status=row.status,
        text=row.text,
        error_kind=row.error_kind,
        error_message=row.error_message,
        duration_ms=row.duration_ms,
        chunks=row.chunk_count,
        attempts=row.attempts,
        sha256=row.sha256,
        updated_at=row.updated_at,
        flags=list(row.flags or []),
        metadata=row.metadata or {},
        machine_text=row.machine_text if row.machine_text is not None else row.text,
        **_review_of(row.extras),
    )


def _review_of(extras: dict[str, Any] | None) -> dict[str, Any]:
    """reviewed_by, reviewed_at and revision from the sign-off kept in the item's extras."""
    review = (extras or {}).get("review") or {}
    return {
        "reviewed_by": review.get("by"),
        "reviewed_at": review.get("at") or review.get("accepted_at"),
        "revision": review.get("revision"),
    }
