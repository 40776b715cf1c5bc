"""The one work queue: claim, renew, settle, release and take back rows of a work table.

Written once, used by the items table (transcription) and the deliveries table alike.

- Claim: PostgreSQL locks the claimable rows with `FOR UPDATE SKIP LOCKED`, so
  concurrent claimers split the work; on SQLite the write session began with BEGIN
  IMMEDIATE, so one claimer runs at a time (SQLite renders no FOR UPDATE). A row whose
  lease lapsed is claimable again, except by the owner that held it (a live process may
  still be working on it).
- Tokens: every claim writes a fresh random token on its row; every later write
  (renewal, a result, settling, release) compares that token, not the owner name, so
  work reported under a claim that is no longer current raises LeaseLost.
- Clock: expiry is judged on the store's clock (PostgreSQL `now()`), not this host's.
- The dead: rows held by ended processes of this machine are taken back at once.
- Doubt: a table may name rows whose work may already have reached the outside world
  (`doubt_when`, e.g. a delivery whose request went out); such a row taken back from
  a dead, lapsed or stopped holder becomes `in_doubt` instead of pending, never claimed
  blindly again.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import (
    ColumnElement,
    Select,
    Table,
    Update,
    and_,
    bindparam,
    case,
    false,
    func,
    or_,
    select,
    update,
)
from sqlalchemy.engine import Row
from sqlalchemy.orm import Session

from storage import clock
from storage.errors import LeaseLost
from storage.models import Delivery, Item
from storage.owners import is_dead_local_owner, local_owner_prefix
from storage.queries import batches
from storage.records import DeliveryStatus

__all__ = ["MESSAGE_MAX_CHARS", "WorkQueue", "cleared_lease", "ended_with_error", "new_lease_token"]

# An error message as a row keeps it: enough for a person, bounded for the table.
MESSAGE_MAX_CHARS = 4000

PENDING, PROCESSING, IN_DOUBT = (
    DeliveryStatus.PENDING,
    DeliveryStatus.PROCESSING,
    DeliveryStatus.IN_DOUBT,
)


def new_lease_token() -> str:
    """A token unique to one claim of one row (32 hex characters)."""
    return uuid.uuid4().hex


def cleared_lease() -> dict[str, Any]:
    """Column values of a row no one holds."""
    return {"lease_owner": None, "lease_expires_at": None, "lease_token": None}


def ended_with_error(
    status: str, *, error_kind: str, message: str, retryable: bool
) -> dict[str, Any]:
    """Column values of a row settled by an error: its status, kind, message (capped at
    MESSAGE_MAX_CHARS) and whether a later try may fix it."""
    return {
        "status": status,
        "error_kind": error_kind,
        "error_message": message[:MESSAGE_MAX_CHARS],
        "retryable": retryable,
    }


class WorkQueue:
    """The claim machine over one work table (`Item` or `Delivery`) inside one session."""

    def __init__(
        self,
        session: Session,
        model: type[Item] | type[Delivery],
        *,
        doubt_when: ColumnElement[bool] | None = None,
    ) -> None:
        self._session = session
        self._model = model
        self._doubt_when = doubt_when

    def now(self) -> datetime:
        """The store's clock (see storage.clock.store_now)."""
        return clock.store_now(self._session)

    def held_under(self, lease_token: str | None) -> ColumnElement[bool]:
        """The row is processing under the claim that wrote `lease_token` (None: never)."""
        if lease_token is None:
            return false()
        return and_(self._model.status == PROCESSING, self._model.lease_token == lease_token)

    def claimable(self, now: datetime, *, owner: str) -> list[ColumnElement[bool]]:
        """Lapsed leases of other owners, then pending rows: two conditions, so that each
        query walks a (status, ..., id) index in id order and stops at the limit."""
        lapsed = self._lapsed(now, owner=owner)
        if self._doubt_when is not None:
            lapsed = and_(lapsed, ~self._doubt_when)
        return [lapsed, self._model.status == PENDING]

    def _lapsed(self, now: datetime, *, owner: str) -> ColumnElement[bool]:
        model = self._model
        return and_(
            model.status == PROCESSING,
            model.lease_expires_at < now,
            or_(model.lease_owner.is_(None), model.lease_owner != owner),
        )

    def lock_ids(self, query: Select[Any]) -> list[int]:
        """Ids of `query`, locked; rows another claimer is taking are skipped (PostgreSQL)."""
        return list(self._session.scalars(query.with_for_update(skip_locked=True)))

    def take(self, ids: Sequence[int], *, owner: str, lease_s: float, now: datetime) -> None:
        """Hold these rows: processing, owner, expiry on `now`, attempts + 1, a token each."""
        model = self._model
        self._session.execute(
            update(model)
            .where(model.id.in_(ids))
            .values(
                status=PROCESSING,
                lease_owner=owner,
                lease_expires_at=now + timedelta(seconds=lease_s),
                attempts=model.attempts + 1,
                updated_at=now,
            )
            .execution_options(synchronize_session=False)
        )
        tokens = [{"id": row_id, "lease_token": new_lease_token()} for row_id in ids]
        self._session.execute(update(model), tokens)

    def renew(self, lease_tokens: Sequence[str], *, lease_s: float) -> frozenset[str]:
        """Extend these claims to `lease_s` from the store's now; returns the tokens lost.

        A lapsed lease that no one took over is still ours and is renewed.
        """
        model = self._model
        expires = self.now() + timedelta(seconds=lease_s)
        renewed: set[str] = set()
        for batch in batches(list(lease_tokens)):
            renewed.update(
                self._session.scalars(
                    update(model)
                    .where(model.status == PROCESSING, model.lease_token.in_(batch))
                    .values(lease_expires_at=expires)
                    .returning(model.lease_token)
                    .execution_options(synchronize_session=False)
                )
            )
        return frozenset(lease_tokens) - renewed

    def require_held(self, row_id: int, *, lease_token: str | None) -> None:
        """Lock the row if our claim holds it; raise LeaseLost otherwise."""
        if self.held_row(row_id, lease_token=lease_token, columns=("id",)) is None:
            raise LeaseLost(f"{self._what(row_id)} is no longer held by this worker")

    def held_row(
        self, row_id: int, *, lease_token: str | None, columns: tuple[str, ...]
    ) -> Row[Any] | None:
        """These columns of the row, locked, if our claim holds it; else None."""
        if lease_token is None:
            return None  # a claim without a token holds nothing
        statement = _held_select(_table(self._model), columns)
        found = self._session.execute(statement, {"held_id": row_id, "held_token": lease_token})
        return found.one_or_none()

    def touch(self, row_id: int, *, lease_token: str | None, **values: Any) -> None:
        """Write `values` on a row our claim still holds (it stays held); raises LeaseLost."""
        self._update_held(row_id, lease_token, values)

    def settle(self, row_id: int, *, lease_token: str | None, **values: Any) -> None:
        """End our claim with `values` (status, results); raises LeaseLost if not current."""
        self._update_held(row_id, lease_token, {**cleared_lease(), **values})

    def _update_held(self, row_id: int, lease_token: str | None, values: dict[str, Any]) -> None:
        if lease_token is None:  # a claim without a token holds nothing
            raise LeaseLost(f"{self._what(row_id)} is no longer held by this worker")
        values = {"updated_at": clock.host_now(), **values}
        statement = _held_update(_table(self._model), tuple(sorted(values)))
        result = self._session.execute(
            statement,
            {"held_id": row_id, "held_token": lease_token}
            | {f"new_{name}": value for name, value in values.items()},
        )
        if result.rowcount != 1:  # type: ignore[attr-defined]
            raise LeaseLost(f"{self._what(row_id)} is no longer held by this worker")

    def release(self, lease_tokens: Sequence[str]) -> None:
        """Give our claims back (attempts - 1): the stop was not the row's fault.

        Pending again, or in_doubt where its work may have gone out already.
        """
        model = self._model
        for batch in batches(list(lease_tokens)):
            self._session.execute(
                update(model)
                .where(model.status == PROCESSING, model.lease_token.in_(batch))
                .values(
                    status=self._returned_status(),
                    attempts=case((model.attempts > 0, model.attempts - 1), else_=0),
                    updated_at=clock.host_now(),
                    **cleared_lease(),
                )
                .execution_options(synchronize_session=False)
            )

    def take_back_dead(self) -> int:
        """Take back rows held by ended processes of this machine; returns how many.

        A killed run's rows need not wait out their lease. Attempts are kept (the crash
        may have been the row's doing). Owners on other hosts are left alone.
        """
        model = self._model
        prefix = local_owner_prefix()
        owners = self._session.scalars(
            select(model.lease_owner)
            .distinct()
            .where(
                model.status == PROCESSING,
                func.substr(model.lease_owner, 1, len(prefix)) == prefix,
            )
        ).all()
        dead = [owner for owner in owners if owner is not None and is_dead_local_owner(owner)]
        if not dead:
            return 0
        return self._take_back(and_(model.status == PROCESSING, model.lease_owner.in_(dead)))

    def doubt_lapsed(self, *, owner: str, now: datetime | None = None) -> int:
        """Lapsed leases of other owners whose work may have gone out -> in_doubt; how many."""
        if self._doubt_when is None:
            return 0
        lapsed = self._lapsed(now or self.now(), owner=owner)
        return self._take_back(and_(lapsed, self._doubt_when))

    def _take_back(self, condition: ColumnElement[bool]) -> int:
        result = self._session.execute(
            update(self._model)
            .where(condition)
            .values(status=self._returned_status(), updated_at=clock.host_now(), **cleared_lease())
            .execution_options(synchronize_session=False)
        )
        return int(result.rowcount)  # type: ignore[attr-defined]

    def _returned_status(self) -> Any:
        if self._doubt_when is None:
            return PENDING
        return case((self._doubt_when, IN_DOUBT), else_=PENDING)

    def _what(self, row_id: int) -> str:
        return f"{'delivery' if self._model is Delivery else 'item'} {row_id}"


# The writes every file makes (settle, touch, the held check) are built once per table
# and column set, with bound parameters: building an UPDATE and its cache key each time
# cost more than running it (tasks/work/group_commit.py runs many in one transaction).


def _table(model: type[Item] | type[Delivery]) -> Table:
    return cast(Table, model.__table__)


@functools.cache
def _held_select(table: Table, columns: tuple[str, ...]) -> Select[Any]:
    """SELECT columns ... FOR UPDATE of row :held_id while processing under :held_token."""
    return (
        select(*(table.c[name] for name in columns))
        .where(
            table.c.id == bindparam("held_id"),
            table.c.status == PROCESSING,
            table.c.lease_token == bindparam("held_token"),
        )
        .with_for_update()
    )


@functools.cache
def _held_update(table: Table, columns: tuple[str, ...]) -> Update:
    """UPDATE row :held_id while processing under :held_token, SET each column = :new_<column>."""
    return (
        update(table)
        .where(
            table.c.id == bindparam("held_id"),
            table.c.status == PROCESSING,
            table.c.lease_token == bindparam("held_token"),
        )
        .values({name: bindparam(f"new_{name}", type_=table.c[name].type) for name in columns})
    )
