"""Plain records of the audit trail: an event to append, and an event as stored."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class NewAuditEvent:
    """What a face asks to append; the store adds the time, sequence and hashes."""

    actor: str
    action: str
    item_id: int | None = None
    path: str | None = None
    target: str | None = None
    detail: Mapping[str, str | int] | None = None


@dataclass(frozen=True)
class AuditEvent:
    """One event of the trail as stored, with its place in the chain."""

    seq: int
    occurred_at: datetime
    actor: str
    action: str
    item_id: int | None
    path: str | None
    target: str | None
    detail: Mapping[str, str | int] | None
    prev_hash: str
    hash: str
    # Why a stored row cannot be read as an event (a time with trailing text, a BLOB
    # where text belongs); None for every row a writer of medasr made.
    unreadable: str | None = None


@dataclass(frozen=True)
class AuditFilter:
    """Which events to read: every field None means no condition on it."""

    since: datetime | None = None
    until: datetime | None = None
    actor: str | None = None
    item_id: int | None = None
    action: str | None = None
