"""Chunks of an item's audio: finished ones are committed (in a group commit) and never
sent again.

Every write of a chunk result takes the item's lease token: the item row is locked first
(through the work queue), so a new owner's fingerprint (which drops the chunks of changed
content) cannot interleave with it.
"""

from __future__ import annotations

import functools
from typing import Any, cast

from sqlalchemy import Table, TextClause, bindparam, delete, select, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from storage import clock
from storage.models import ChunkRow, Item
from storage.records import ChunkRecord
from storage.work_queue import WorkQueue

CHUNKS = cast(Table, ChunkRow.__table__)
_FINISHED_CHUNK_STATUSES = ("done", "silent")


class Chunks:
    """Read and record the chunks of items inside one session."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self._items = WorkQueue(session, Item)

    def done_chunks(self, item_id: int) -> dict[int, ChunkRecord]:
        """Finished chunks of an item (done or silent), by index: never send these again."""
        rows = self._session.execute(
            select(CHUNKS).where(
                ChunkRow.item_id == item_id, ChunkRow.status.in_(_FINISHED_CHUNK_STATUSES)
            )
        )
        records = (ChunkRecord(**row._asdict()) for row in rows)
        return {record.index: record for record in records}

    def reset_chunks(self, item_id: int) -> None:
        """Forget an item's chunks (its content changed)."""
        self._session.execute(delete(ChunkRow).where(ChunkRow.item_id == item_id))

    def record_chunk_result(
        self,
        item_id: int,
        *,
        lease_token: str | None,
        index: int,
        start_ms: int,
        end_ms: int,
        size_bytes: int,
        text: str,
        status: str = "done",
        attempts: int = 1,
        txn_id: str | None = None,
        latency_ms: float | None = None,
    ) -> None:
        """Insert or replace one chunk's result while our claim holds the item; else LeaseLost.

        Commit right after: one chunk, one transaction.
        """
        self._items.require_held(item_id, lease_token=lease_token)
        self._upsert_chunk(
            {
                "item_id": item_id,
                "index": index,
                "start_ms": start_ms,
                "end_ms": end_ms,
                "size_bytes": size_bytes,
                "status": status,
                "text": text,
                "attempts": attempts,
                "txn_id": txn_id,
                "latency_ms": latency_ms,
            }
        )

    def record_recovered_chunk(
        self, item_id: int, *, source_uri: str, sha256: str | None, **chunk: Any
    ) -> bool:
        """Record a paid answer kept in the journal (no lease: its worker is gone).

        Only while the item is the same source with the same content and not yet done;
        returns False (nothing written) otherwise. `chunk` holds index, start_ms, end_ms,
        size_bytes, text, attempts, txn_id and latency_ms.
        """
        row = self._session.execute(
            select(Item.source_uri, Item.sha256, Item.status)
            .where(Item.id == item_id)
            .with_for_update()
        ).one_or_none()
        if row is None or row.status == "done" or sha256 is None:
            return False
        if (row.source_uri, row.sha256) != (source_uri, sha256):
            return False
        self._upsert_chunk({"item_id": item_id, "status": "done", **chunk})
        return True

    def _upsert_chunk(self, values: dict[str, Any]) -> None:
        values = {**values, "updated_at": clock.host_now()}
        dialect = self._session.get_bind().dialect.name
        self._session.execute(_chunk_upsert(dialect, tuple(sorted(values))), values)


@functools.cache
def _chunk_upsert(dialect: str, columns: tuple[str, ...]) -> TextClause:
    """The upsert of one chunk row for a dialect and column set: SQLAlchemy's own ON
    CONFLICT insert, compiled once to SQL text with typed binds. The dialects' inserts are
    not cached (`inherit_cache = False` in SQLAlchemy 2.0): compiled again for every
    answer, that cost more CPU than running them. Text is cached like any statement."""
    upsert = (postgresql_insert if dialect == "postgresql" else sqlite_insert)(CHUNKS)
    statement = upsert.on_conflict_do_update(
        index_elements=["item_id", "index"],
        set_={k: upsert.excluded[k] for k in columns if k not in ("item_id", "index")},
    )
    # Compiled with `:name` binds, the style text() reads, whatever the driver's.
    named = (postgresql.dialect if dialect == "postgresql" else sqlite.dialect)(paramstyle="named")
    sql = str(statement.compile(dialect=named, column_keys=list(columns)))
    return text(sql).bindparams(*(bindparam(k, type_=CHUNKS.c[k].type) for k in columns))
