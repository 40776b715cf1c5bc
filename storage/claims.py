"""Claiming items on the work queue (storage/work_queue.py), and giving them back.

The queue does the claiming (SKIP LOCKED / BEGIN IMMEDIATE, a token per claim, the
store's clock, taking back the dead); this module chooses which items: of a language,
under a source prefix, among given URIs. Failures are re-queued here too.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, and_, delete, or_, select, update
from sqlalchemy.orm import Session

from storage import clock
from storage.models import ChunkRow, Item
from storage.queries import IN_BATCH, Queries, under_source
from storage.records import ItemRecord
from storage.work_queue import WorkQueue, cleared_lease

_SCAN_PAGE = 1000

__all__ = ["Claims"]


class Claims(Queries):
    """Claim, renew, release and re-queue items."""

    def __init__(self, session: Session) -> None:
        super().__init__(session)
        self._queue = WorkQueue(session, Item)

    def _claimable(
        self, now: datetime, *, owner: str, language: str | None, source_prefix: str | None
    ) -> list[ColumnElement[bool]]:
        """The queue's two claimable conditions (lapsed, pending), narrowed: each query
        walks the (status, language, id) index in id order and stops at the limit."""
        narrowing = []
        if language is not None:
            narrowing.append(Item.language == language)
        if source_prefix is not None:
            narrowing.append(under_source(source_prefix))
        return [and_(c, *narrowing) for c in self._queue.claimable(now, owner=owner)]

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
        now = now or self._queue.now()
        if limit <= 0:
            return []
        ids: list[int] = []
        claimable_now = self._claimable(
            now, owner=owner, language=language, source_prefix=source_prefix
        )
        for claimable in claimable_now:
            ids += self._lock_claimable(claimable, limit=limit - len(ids), uris=uris)
            if len(ids) >= limit:
                break
        if not ids:
            return []
        self._queue.take(ids, owner=owner, lease_s=lease_s, now=now)
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
        return self._queue.lock_ids(query)

    def renew_leases(self, lease_tokens: Sequence[str], *, lease_s: float) -> frozenset[str]:
        """Extend the leases of these claims to `lease_s` from the store's now; returns the
        tokens no longer held.

        A returned token's claim is over: another worker claimed the item after the lease
        lapsed, a new listing sent it back to pending because its content changed, or it
        was released or settled. The caller must stop working on that item at once (send
        no more chunks): every later write under that token raises LeaseLost. A lapsed
        lease that no one took over is still ours and is renewed.
        """
        return self._queue.renew(lease_tokens, lease_s=lease_s)

    def release_items(self, lease_tokens: Sequence[str]) -> None:
        """Give our claims back (pending, attempts - 1): the stop was not the item's fault."""
        self._queue.release(lease_tokens)

    def release_dead_local_leases(self) -> int:
        """Give back items held by ended processes of this machine; returns how many.

        A killed run's items need not wait out their lease. Attempts are kept: the
        crash may have been the item's doing. Owners on other hosts are left alone.
        """
        return self._queue.take_back_dead()

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
        now = now or clock.host_now()
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
