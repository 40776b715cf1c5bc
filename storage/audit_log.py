"""The audit trail's table: append under a lock, read by filter, walk in chain order.

An append takes the one lock that orders the chain (SQLite: the write transaction's
BEGIN IMMEDIATE already is it; PostgreSQL: a transaction-scoped advisory lock), reads
the newest event and the database's clock, and inserts the next event with its hash.
The lock is held until the caller's transaction ends, so the event commits (or rolls
back) with the change it describes and no two appends ever see the same newest event.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Row, Select, String, Text, insert, or_, select, text, type_coerce
from sqlalchemy.orm import Session

from storage.audit_chain import GENESIS, seal_event
from storage.audit_records import AuditEvent, AuditFilter, NewAuditEvent
from storage.errors import StoreFailed
from storage.models import AuditEventRow

_AUDIT_LOCK_ID = 0x61756469  # any constant; PostgreSQL appends take it in turn
_PAGE = 5_000
_COLUMNS = AuditEventRow.__table__.c
_READ_ONLY = "medasr_read_only"
_LOCK = text("SELECT pg_advisory_xact_lock(:id)")
# The newest event and the clock in one round trip, read after the lock is held, so the
# chain's times ascend with its sequence.
_NEWEST = (
    "SELECT (SELECT seq FROM audit_events ORDER BY seq DESC LIMIT 1),"
    " (SELECT hash FROM audit_events ORDER BY seq DESC LIMIT 1), {now}"
)
_NEWEST_SQLITE = text(_NEWEST.format(now="strftime('%Y-%m-%d %H:%M:%f', 'now')"))
_NEWEST_POSTGRESQL = text(_NEWEST.format(now="clock_timestamp()"))
_INSERT = insert(AuditEventRow)
_UNREADABLE_TIME = datetime(1970, 1, 1, tzinfo=UTC)  # shown for a time that cannot be read


class AuditLog:
    """Append and read audit events inside one session (`uow.audit`)."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def append(self, event: NewAuditEvent) -> AuditEvent:
        """Append `event` as the newest of the chain, timed by the database's clock."""
        connection = self._session.connection()
        if connection.get_execution_options().get(_READ_ONLY, False):
            raise StoreFailed("an audit event can only be written in a write unit of work")
        if connection.dialect.name == "postgresql":
            connection.execute(_LOCK, {"id": _AUDIT_LOCK_ID})
            seq, prev_hash, now = connection.execute(_NEWEST_POSTGRESQL).one()
        else:  # the write transaction's BEGIN IMMEDIATE is the lock
            seq, prev_hash, now = connection.execute(_NEWEST_SQLITE).one()
        seq, prev_hash = (seq + 1, prev_hash) if seq is not None else (1, GENESIS)
        stored = seal_event(event, seq=seq, occurred_at=_as_utc(now), prev_hash=prev_hash)
        connection.execute(_INSERT, {k: v for k, v in vars(stored).items() if k != "unreadable"})
        return stored

    def newest_event(self, *, action: str | None = None) -> AuditEvent | None:
        """The newest event of the chain (of `action`), if any."""
        query = _select_events()
        if action is not None:
            query = query.where(_COLUMNS.action == action)
        row = self._session.execute(query.order_by(_COLUMNS.seq.desc()).limit(1)).first()
        return _event(row) if row else None

    def find_by_hash(self, event_hash_hex: str) -> AuditEvent | None:
        """The event that carries this hash, if any."""
        row = self._session.execute(_select_events().where(_COLUMNS.hash == event_hash_hex)).first()
        return _event(row) if row else None

    def chain(self, *, after_seq: int | None = None) -> Iterator[AuditEvent]:
        """Every event (after `after_seq`) in chain order, streamed page by page; every
        row, even one whose number no writer would give (zero, negative)."""
        return self._pages(_select_events(), after_seq=after_seq)

    def events(self, selection: AuditFilter) -> Iterator[AuditEvent]:
        """The events that pass `selection`, oldest first, streamed page by page."""
        query = _select_events()
        for condition in _conditions(selection):
            query = query.where(condition)
        return self._pages(query, after_seq=None)

    def _pages(self, query: Select[Any], *, after_seq: int | None) -> Iterator[AuditEvent]:
        while True:
            page = query if after_seq is None else query.where(_COLUMNS.seq > after_seq)
            rows = self._session.execute(page.order_by(_COLUMNS.seq).limit(_PAGE)).all()
            yield from (_event(row) for row in rows)
            if len(rows) < _PAGE:
                return
            after_seq = rows[-1].seq


def _select_events() -> Select[Any]:
    """Every column, the time and detail as the database holds them: one row written by
    hand (SQLite keeps any value) must not stop the reading of the others."""
    raw = {"occurred_at": String(), "detail": Text()}
    return select(
        *(
            type_coerce(column, raw[column.name]).label(column.name)
            if column.name in raw
            else column
            for column in _COLUMNS
        )
    )


def _conditions(selection: AuditFilter) -> list[Any]:
    conditions: list[Any] = []
    if selection.since is not None:
        conditions.append(AuditEventRow.occurred_at >= selection.since)
    if selection.until is not None:
        conditions.append(AuditEventRow.occurred_at < selection.until)
    if selection.actor is not None:
        # A command's actor is os:USER@HOST: the user's name alone finds it too.
        escaped = selection.actor.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        conditions.append(
            or_(
                _COLUMNS.actor == selection.actor,
                _COLUMNS.actor.like(f"os:{escaped}@%", escape="\\"),
            )
        )
    if selection.item_id is not None:
        conditions.append(_COLUMNS.item_id == selection.item_id)
    if selection.action is not None:
        conditions.append(_COLUMNS.action == selection.action)
    return conditions


def _as_utc(value: datetime | str) -> datetime:
    """The database clock's answer as aware UTC (SQLite answers text)."""
    if isinstance(value, str):
        return datetime.fromisoformat(value).replace(tzinfo=UTC)
    return value.astimezone(UTC)


def _event(row: Row[Any]) -> AuditEvent:
    problems: list[str] = []
    texts = {
        name: _text(getattr(row, name), name, problems)
        for name in ("actor", "action", "path", "target", "prev_hash", "hash")
    }
    seq, item_id = row.seq, row.item_id
    if not isinstance(seq, int) or not isinstance(item_id, int | None):
        problems.append("its number or item is not an integer")
    return AuditEvent(
        seq=seq if isinstance(seq, int) else -1,
        occurred_at=_time(row.occurred_at, problems),
        actor=texts["actor"] or "",
        action=texts["action"] or "",
        item_id=item_id if isinstance(item_id, int) else None,
        path=texts["path"],
        target=texts["target"],
        detail=_detail(row.detail, problems),
        prev_hash=texts["prev_hash"] or "",
        hash=texts["hash"] or "",
        unreadable="; ".join(problems) or None,
    )


def _text(value: object, name: str, problems: list[str]) -> str | None:
    if value is None or isinstance(value, str):
        return value
    problems.append(f"its {name} is stored as {type(value).__name__}, not text")
    return None


def _time(value: object, problems: list[str]) -> datetime:
    """The stored time as aware UTC (SQLite holds text, PostgreSQL a timestamp)."""
    if isinstance(value, datetime):
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    try:
        parsed = datetime.fromisoformat(str(value))
    except ValueError:
        problems.append("its time is not a date and time")
        return _UNREADABLE_TIME
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def _detail(value: object, problems: list[str]) -> dict[str, str | int] | None:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            value = ...
    if value is None or isinstance(value, dict):
        return value
    problems.append("its detail is not a JSON object")
    return None
