"""Lease tokens and the lease clock: who holds an item, and whose clock says when it lapses.

Every claim writes a fresh random token on the item; every later check (renewal,
chunk result, fingerprint, settling, release) compares that token, not the owner name.
So one process never passes the checks of a claim it did not make, not even its own
earlier claim of the same item in another batch loop.

Expiry is judged on the store's clock: PostgreSQL's `now()` (the start of the current
transaction, read once per claim or renewal) for every host alike, so a host whose wall
clock runs ahead cannot see a live lease as lapsed. SQLite is a file on one host: every
process reads the same system clock, which is the store's clock there.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, and_, false, func, select, update
from sqlalchemy.orm import Session

from storage.models import Delivery, Item
from storage.owners import is_dead_local_owner, local_owner_prefix
from storage.queries import utc_now

__all__ = ["held_under", "new_lease_token", "store_now"]


def new_lease_token() -> str:
    """A token unique to one claim of one item (32 hex characters)."""
    return uuid.uuid4().hex


def held_under(lease_token: str | None) -> ColumnElement[bool]:
    """The item is being processed under the claim that wrote `lease_token` (None: never)."""
    if lease_token is None:
        return false()
    return and_(Item.status == "processing", Item.lease_token == lease_token)


def store_now(session: Session) -> datetime:
    """The store's current time, timezone-aware UTC: PostgreSQL's now(), else this host's."""
    if session.get_bind().dialect.name == "postgresql":
        now = session.scalar(select(func.now()))
        if isinstance(now, datetime):
            return now.astimezone(UTC)
    return host_now()


def host_now() -> datetime:
    """This host's wall clock, timezone-aware UTC."""
    return datetime.now(UTC)


def release_dead_local_holders(
    session: Session, model: type[Item] | type[Delivery], *, cleared: dict[str, Any]
) -> int:
    """Set rows of `model` held by ended processes of this machine back to pending.

    Owners on other hosts are left alone; `cleared` is the lease columns' empty values.
    """
    prefix = local_owner_prefix()
    owners = session.scalars(
        select(model.lease_owner)
        .distinct()
        .where(
            model.status == "processing", func.substr(model.lease_owner, 1, len(prefix)) == prefix
        )
    ).all()
    dead = [owner for owner in owners if owner is not None and is_dead_local_owner(owner)]
    if not dead:
        return 0
    result = session.execute(
        update(model)
        .where(model.status == "processing", model.lease_owner.in_(dead))
        .values(status="pending", updated_at=utc_now(), **cleared)
        .execution_options(synchronize_session=False)
    )
    return int(result.rowcount)  # type: ignore[attr-defined]
