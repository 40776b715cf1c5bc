"""Claiming items under a lease, exactly once across processes, and giving them back.

PostgreSQL: the claimable rows are locked with `FOR UPDATE SKIP LOCKED`, so concurrent
claimers split the work. SQLite: the write session began with BEGIN IMMEDIATE, so only
one claimer runs at a time (SQLite renders no FOR UPDATE). An item whose lease expired
is claimable again, except by the process (owner) that held it: it may still be working
on it. Each claim writes its own lease token (storage/leases.py) and every check compares
that token, so work reported under a claim that is no longer current raises LeaseLost.
Expiry is judged on the store's clock (PostgreSQL `now()`), not this host's.
Items held by a process of this machine that has ended (killed, crashed) are given
back at once by `release_dead_local_leases`, without waiting for the lease to expire.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, and_, case, delete, or_, select, update

from storage.leases import new_lease_token, release_dead_local_holders, store_now
from storage.models import ChunkRow, Item
from storage.owners import new_lease_owner
from storage.queries import IN_BATCH, Queries, batches, under_source, utc_now
from storage.records import ItemRecord

_SCAN_PAGE = 1000

__all__ = ["Claims", "cleared_lease", "new_lease_owner"]


def _claimable(
    now: datetime, *, owner: str, language: str | None, source_prefix: str | None
) -> list[ColumnElement[bool]]:
    """Expired leases of other owners, then pending items: two conditions, so that each
    query walks the (status, language, id) index in id order and stops at the limit
    instead of sorting every pending row. `owner`'s own lapsed leases are left alone: a
    live process may still be working on them (its lease keeper was late)."""
    narrowing = []
    if language is not None:
        narrowing.append(Item.language == language)
    if source_prefix is not None:
        narrowing.append(under_source(source_prefix))
    expired = and_(
        Item.status == "processing",
        Item.lease_expires_at < now,
        or_(Item.lease_owner.is_(None), Item.lease_owner != owner),
        *narrowing,
    )
    return [expired, and_(Item.status == "pending", *narrowing)]


def cleared_lease() -> dict[str, Any]:
    """Column values of an item no one holds."""
    return {"lease_owner": None, "lease_expires_at": None, "lease_token": None}


class Claims(Queries):
    """Claim, renew, release and re-queue items."""

    def claim_batch(
        self,
        *,
        owner: str,
        language: str | None,
        limit: int,
        lease_s: float,
        now: datetime | None = None,
        uris: Sequence[str] | None = None,
        source_prefix: str | None = None,
    ) -> list[ItemRecord]:
        """Claim up to `limit` pending (or lease-expired) items, oldest first; attempts += 1.

        Each item gets its own lease token (in the returned records): pass it to every
        later write. `uris` restricts the claim to those sources; `source_prefix` to
        sources under a normalized folder or bucket prefix (see
        storage.sources.normalize_source). `now` stands in for the store's clock (tests).
        """
        now = now or store_now(self._session)
        if limit <= 0:
            return []
        ids: list[int] = []
        claimable_now = _claimable(now, owner=owner, language=language, source_prefix=source_prefix)
        for claimable in claimable_now:
            ids += self._lock_claimable(claimable, limit=limit - len(ids), uris=uris)
            if len(ids) >= limit:
                break
        if not ids:
            return []
        self._session.execute(
            update(Item)
            .where(Item.id.in_(ids))
            .values(
                status="processing",
                lease_owner=owner,
                lease_expires_at=now + timedelta(seconds=lease_s),
                attempts=Item.attempts + 1,
                updated_at=now,
            )
            .execution_options(synchronize_session=False)
        )
        tokens = [{"id": item_id, "lease_token": new_lease_token()} for item_id in ids]
        self._session.execute(update(Item), tokens)
        return self._items_where(Item.id.in_(ids))

    def _lock_claimable(
        self, claimable: ColumnElement[bool], *, limit: int, uris: Sequence[str] | None
    ) -> list[int]:
        query = select(Item.id).where(claimable).order_by(Item.id)
        if uris is None:
            return self._locked_ids(query.limit(limit))
        wanted = list(dict.fromkeys(uris))
        if len(wanted) <= IN_BATCH:
            return self._locked_ids(query.where(self._uri_in(wanted)).limit(limit))
        return self._scan_claimable(set(wanted), claimable, limit=limit)

    def _scan_claimable(
        self, wanted: set[str], claimable: ColumnElement[bool], *, limit: int
    ) -> list[int]:
        """Claimable ids among many URIs: page through claimable rows, lock the wanted ones."""
        chosen: list[int] = []
        after = 0
        while len(chosen) < limit:
            page = self._session.execute(
                select(Item.id, Item.source_uri)
                .where(claimable, Item.id > after)
                .order_by(Item.id)
                .limit(_SCAN_PAGE)
            ).all()
            if not page:
                break
            after = page[-1].id
            candidates = [r.id for r in page if r.source_uri in wanted][: limit - len(chosen)]
            if candidates:
                chosen += self._locked_ids(
                    select(Item.id).where(Item.id.in_(candidates), claimable).order_by(Item.id)
                )
        return chosen

    def _locked_ids(self, query: Any) -> list[int]:
        # SKIP LOCKED: rows another claimer is taking are left to it (PostgreSQL only;
        # SQLite renders no FOR UPDATE, its BEGIN IMMEDIATE already excludes claimers).
        return list(self._session.scalars(query.with_for_update(skip_locked=True)))

    def renew_leases(self, lease_tokens: Sequence[str], *, lease_s: float) -> frozenset[str]:
        """Extend the leases of these claims to `lease_s` from the store's now; returns the
        tokens no longer held.

        A returned token's claim is over: another worker claimed the item after the lease
        lapsed, a new listing sent it back to pending because its content changed, or it
        was released or settled. The caller must stop working on that item at once (send
        no more chunks): every later write under that token raises LeaseLost. A lapsed
        lease that no one took over is still ours and is renewed.
        """
        expires = store_now(self._session) + timedelta(seconds=lease_s)
        renewed: set[str] = set()
        for batch in batches(list(lease_tokens)):
            renewed.update(
                self._session.scalars(
                    update(Item)
                    .where(Item.status == "processing", Item.lease_token.in_(batch))
                    .values(lease_expires_at=expires)
                    .returning(Item.lease_token)
                    .execution_options(synchronize_session=False)
                )
            )
        return frozenset(lease_tokens) - renewed

    def release_items(self, lease_tokens: Sequence[str]) -> None:
        """Give our claims back (pending, attempts - 1): the stop was not the item's fault."""
        for batch in batches(list(lease_tokens)):
            self._session.execute(
                update(Item)
                .where(Item.status == "processing", Item.lease_token.in_(batch))
                .values(
                    status="pending",
                    attempts=case((Item.attempts > 0, Item.attempts - 1), else_=0),
                    updated_at=utc_now(),
                    **cleared_lease(),
                )
                .execution_options(synchronize_session=False)
            )

    def release_dead_local_leases(self) -> int:
        """Give back items held by ended processes of this machine; returns how many.

        A killed run's items need not wait out their lease. Attempts are kept: the
        crash may have been the item's doing. Owners on other hosts are left alone.
        """
        return release_dead_local_holders(self._session, Item, cleared=cleared_lease())

    def requeue_failures(
        self,
        *,
        language: str | None,
        max_attempts: int,
        include_permanent: bool,
        include_skipped: bool = False,
        now: datetime | None = None,
    ) -> int:
        """Send failures back to pending; returns how many.

        Without `include_permanent`: retryable failures under `max_attempts` whose
        next-attempt time has come. With it: every failed item (of `language`).
        `include_skipped`: every skipped item too, its silent chunks forgotten so the
        next run judges its audio afresh (they cost nothing to judge again).
        """
        now = now or utc_now()
        failed: list[ColumnElement[bool]] = [Item.status == "failed"]
        if not include_permanent:
            failed += [
                Item.retryable.is_(True),
                Item.attempts < max_attempts,
                or_(Item.next_attempt_at.is_(None), Item.next_attempt_at <= now),
            ]
        chosen = and_(*failed)
        if include_skipped:
            chosen = or_(chosen, Item.status == "skipped")
            self._forget_silent_chunks(language=language)
        if language is not None:
            chosen = and_(chosen, Item.language == language)
        result = self._session.execute(
            update(Item)
            .where(chosen)
            .values(status="pending", next_attempt_at=None, updated_at=now, **cleared_lease())
            .execution_options(synchronize_session=False)
        )
        return int(result.rowcount)  # type: ignore[attr-defined]

    def _forget_silent_chunks(self, *, language: str | None) -> None:
        skipped = select(Item.id).where(Item.status == "skipped")
        if language is not None:
            skipped = skipped.where(Item.language == language)
        self._session.execute(
            delete(ChunkRow).where(ChunkRow.status == "silent", ChunkRow.item_id.in_(skipped))
        )
