"""Plain records of retention: which recordings a purge takes, and what it kept of each."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class PurgeSelection:
    """Recordings finished before `finished_before` (of `language`), and how strict to be.

    By default only done recordings delivered to every target they were sent to (or, when
    no delivery is configured, with no delivery at all) and skipped ones are taken;
    `include_undelivered` takes held, failed and undelivered ones too.
    """

    finished_before: datetime
    language: str | None = None
    include_undelivered: bool = False
    delivery_configured: bool = False


@dataclass(frozen=True)
class PurgedItem:
    """One recording whose patient data a purge removed: what it was, and the digest of
    the SHA-256 of each removed text (kept on the row under extras["purged"])."""

    id: int
    language: str
    status: str  # before the purge
    finished_at: datetime
    digest: str


@dataclass(frozen=True)
class KeptCount:
    """Recordings old enough but kept, by why: held, failed, undelivered, in_doubt."""

    reason: str
    language: str
    items: int
