"""What was sent (`uow.spend`): per recording, the requests and the billed audio its
chunks cost, as the store recorded them (`medasr status --by`).

One row per recording that sent anything or is done, its chunks added up in SQL:
requests are the attempts of its answered chunks (retries included), billed audio is
each attempt billed at its chunk's length or at the vendor's least billed length,
whichever is more. Silent chunks were never sent and cost nothing; a copy done by
content reuse sent nothing, so it is a recording done that cost no request. Rows
stream (`yield_per`), so a store of 10^6 recordings is read in pages.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Iterator
from contextlib import closing
from datetime import datetime
from typing import Any, cast

from sqlalchemy import ColumnElement, Subquery, Table, case, func, literal, select
from sqlalchemy.orm import Session

from storage.models import ChunkRow, Item
from storage.queries import under_source
from storage.records import ChunkStatus, ItemStatus, PendingAudio, SentRecording

ITEMS = cast(Table, Item.__table__)
CHUNKS = cast(Table, ChunkRow.__table__)
_PAGE_ROWS = 2000
# Statuses of a recording whose text is done (by a request or by content reuse).
_DONE = (ItemStatus.DONE.value, ItemStatus.NEEDS_REVIEW.value)


class Spend:
    """Reads what recordings cost; never writes."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def sent_recordings(
        self,
        *,
        billed_min_ms: int,
        since: datetime | None = None,
        until: datetime | None = None,
        language: str | None = None,
    ) -> Iterator[SentRecording]:
        """Recordings that sent at least one request or are done (a reused copy sent
        none), finished (or last changed) in [since, until); each with its requests and
        billed ms."""
        per_item = _requests_per_item(billed_min_ms=billed_min_ms)
        finished = func.coalesce(ITEMS.c.done_at, ITEMS.c.updated_at)
        query = (
            select(
                ITEMS.c.language,
                ITEMS.c.status,
                finished.label("finished_at"),
                ITEMS.c.metadata,
                ITEMS.c.duration_ms,
                per_item.c.requests,
                per_item.c.billed_ms,
            )
            .outerjoin(per_item, per_item.c.item_id == ITEMS.c.id)
            .where(per_item.c.item_id.is_not(None) | ITEMS.c.status.in_(_DONE))
            .order_by(ITEMS.c.id)
        )
        query = query.where(*_chosen(finished, since=since, until=until, language=language))
        rows = self._session.execute(query.execution_options(yield_per=_PAGE_ROWS))
        for row in rows:
            yield SentRecording(
                language=row.language,
                status=row.status,
                finished_at=row.finished_at,
                metadata=dict(row.metadata or {}),
                duration_ms=int(row.duration_ms or 0),
                requests=int(row.requests or 0),
                billed_ms=int(row.billed_ms or 0),
            )

    def has_column(self, column: str) -> bool:
        """Whether any recording's manifest columns (its metadata) hold `column`; stops
        at the first that does."""
        with closing(self._column_names()) as held:  # an early stop closes the cursor
            return any(column in names for names in held)

    def columns(self) -> set[str]:
        """Every manifest column some recording holds (reads every recording's metadata:
        for the message that names them, not for a figure)."""
        return set().union(*self._column_names())

    def _column_names(self) -> Generator[Iterable[str], None, None]:
        # Read here, not matched in SQL: SQLite's JSON paths cannot spell every column
        # name a manifest may use (a quote, a non-ASCII letter), PostgreSQL's can.
        rows = select(ITEMS.c.metadata).where(ITEMS.c.metadata.is_not(None))
        result = self._session.execute(rows.execution_options(yield_per=_PAGE_ROWS))
        try:
            for (metadata,) in result:
                yield metadata or {}
        finally:
            result.close()

    def pending_audio(self, *, language: str | None, source_prefix: str | None) -> PendingAudio:
        """Recordings waiting to be claimed (of `language`, under `source_prefix`): how
        many, the audio of those with a stored length, the bytes of the others."""
        measured = ITEMS.c.duration_ms.is_not(None)
        query = select(
            func.count(),
            func.coalesce(func.sum(case((measured, ITEMS.c.duration_ms), else_=0)), 0),
            func.coalesce(func.sum(case((measured, 0), else_=ITEMS.c.size_bytes)), 0),
        ).where(ITEMS.c.status == ItemStatus.PENDING.value)
        if language is not None:
            query = query.where(ITEMS.c.language == language)
        if source_prefix is not None:
            query = query.where(under_source(source_prefix))
        count, measured_ms, unmeasured_bytes = self._session.execute(query).one()
        return PendingAudio(int(count), int(measured_ms), int(unmeasured_bytes))


def _chosen(
    finished: ColumnElement[Any],
    *,
    since: datetime | None,
    until: datetime | None,
    language: str | None,
) -> list[ColumnElement[bool]]:
    """Finished in [since, until), of `language`: each bound only when given."""
    chosen: list[ColumnElement[bool]] = []
    if since is not None:
        chosen.append(finished >= since)
    if until is not None:
        chosen.append(finished < until)
    if language is not None:
        chosen.append(ITEMS.c.language == language)
    return chosen


def _requests_per_item(*, billed_min_ms: int) -> Subquery:
    """Per item: the requests its chunks sent (silent ones send none) and the ms billed,
    each request billed at least `billed_min_ms`."""
    length = CHUNKS.c.end_ms - CHUNKS.c.start_ms
    least = literal(max(billed_min_ms, 0))
    billed = case((length < least, least), else_=length) * CHUNKS.c.attempts
    return (
        select(
            CHUNKS.c.item_id,
            func.sum(CHUNKS.c.attempts).label("requests"),
            func.sum(billed).label("billed_ms"),
        )
        .where(CHUNKS.c.status != ChunkStatus.SILENT.value)
        .group_by(CHUNKS.c.item_id)
        .subquery()
    )
