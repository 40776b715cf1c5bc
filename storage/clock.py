"""The two clocks a store knows: this host's, and the store's own.

Leases lapse on the store's clock (PostgreSQL `now()`), so that workers on hosts with
skewed clocks agree on who holds what; timestamps that only record when something
happened (`updated_at`, `done_at`) take this host's. Every storage module reads both
through this module's attributes (`clock.host_now()`, `clock.store_now(session)`), never
`datetime.now` nor a `from storage.clock import`: one place to patch to skew a host.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

__all__ = ["host_now", "store_now"]


def host_now() -> datetime:
    """This host's wall clock, timezone-aware UTC."""
    return datetime.now(UTC)


def store_now(session: Session) -> datetime:
    """The store's current time, timezone-aware UTC: PostgreSQL's now(), else this host's.

    SQLite is a file on one host: every process reads the same system clock there.
    """
    if session.get_bind().dialect.name == "postgresql":
        now = session.scalar(select(func.now()))
        if isinstance(now, datetime):
            return now.astimezone(UTC)
    return host_now()
