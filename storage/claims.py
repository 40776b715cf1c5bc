"""The holder of a claim on items (`uow.claims`): claim, renew, write, settle, release.

The work queue's face for items (storage/work_queue.py does the claiming: SKIP LOCKED /
BEGIN IMMEDIATE, a token per claim, the store's clock, taking back the dead). This
module chooses which items (of a language, under a source prefix, among given URIs)
and writes under the claim: the fingerprint, then the item's end (done, needs_review,
skipped, failed, purged again). Every write takes the claim's lease token and raises
LeaseLost when the claim is no longer current.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, and_, delete, select
from sqlalchemy.orm import Session

from storage import clock
from storage.errors import LeaseLost
from storage.models import ChunkRow, Item
from storage.queries import IN_BATCH, items_where, under_source, uri_in
from storage.records import ItemRecord, ItemStatus
from storage.work_queue import WorkQueue, ended_with_error

_SCAN_PAGE = 1000

__all__ = ["Claims"]


class Claims:
    """Claim items, renew and release the claims, and settle what a claim holds."""

    def __init__(self, session: Session) -> None:
        self._session = session
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
        return items_where(self._session, Item.id.in_(ids))

    def _lock_claimable(
        self, claimable: ColumnElement[bool], *, limit: int, uris: Sequence[str] | None
    ) -> list[int]:
        query = select(Item.id).where(claimable).order_by(Item.id)
        if uris is None:
            return self._locked_ids(query.limit(limit))
        wanted = list(dict.fromkeys(uris))
        if len(wanted) <= IN_BATCH:
            return self._locked_ids(query.where(uri_in(self._session, wanted)).limit(limit))
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

    def set_fingerprint(
        self,
        item_id: int,
        *,
        sha256: str,
        size_bytes: int,
        lease_token: str | None,
        checked_content: bool = False,
    ) -> None:
        """Record the content fingerprint; different content drops the old chunks. LeaseLost.

        `checked_content`: the caller compared `sha256` with the fingerprint its claim
        found and reset the chunks of changed content itself (tasks/transcription/reuse.py):
        one UPDATE, the stored fingerprint is not read again.
        """
        if checked_content:
            self._queue.touch(
                item_id, lease_token=lease_token, sha256=sha256, size_bytes=size_bytes
            )
            return
        held = self._queue.held_row(item_id, lease_token=lease_token, columns=("sha256",))
        if held is None:
            raise LeaseLost(f"item {item_id} is no longer held by this worker")
        if held.sha256 is not None and held.sha256 != sha256:  # its old chunks are void
            self._session.execute(delete(ChunkRow).where(ChunkRow.item_id == item_id))
        self._queue.touch(item_id, lease_token=lease_token, sha256=sha256, size_bytes=size_bytes)

    def finish_item(
        self,
        item_id: int,
        *,
        lease_token: str | None,
        text: str,
        duration_ms: int | None,
        chunk_count: int,
        extras: Mapping[str, Any],
        flags: Sequence[str] = (),
        hold_for_review: bool = False,
    ) -> None:
        """Mark our item done with its transcript, or needs_review when the quality gate
        flagged it or every transcript waits for a person (`hold_for_review`); raises
        LeaseLost if it is no longer ours."""
        now = clock.host_now()
        self._settle(
            item_id,
            lease_token=lease_token,
            status="needs_review" if flags or hold_for_review else "done",
            flags=list(flags) or None,
            text=text,
            machine_text=None,
            duration_ms=duration_ms,
            chunk_count=chunk_count,
            extras=dict(extras),
            done_at=now,
            error_kind=None,
            error_message=None,
            retryable=False,
            next_attempt_at=None,
        )

    def keep_purged(self, item_id: int, *, lease_token: str | None) -> None:
        """Settle our item purged again: its file was touched, its bytes are the same (the
        purge receipt in extras stays); raises LeaseLost."""
        self._settle(item_id, lease_token=lease_token, status=ItemStatus.PURGED, attempts=0)

    def keep_result(
        self, item_id: int, *, lease_token: str | None, extras: Mapping[str, Any]
    ) -> None:
        """Settle our touched item as it was: its file holds the same bytes (transcript,
        review and finish time unchanged; status and duration from extras["touched"], the
        rest of `extras` as before it was listed again); raises LeaseLost."""
        kept = {k: v for k, v in extras.items() if k != "touched"}
        touched = extras["touched"]
        self._settle(
            item_id,
            lease_token=lease_token,
            status=touched["status"],
            duration_ms=touched.get("duration_ms"),
            extras=kept or None,
        )

    def forget_result(self, item_id: int, *, lease_token: str | None) -> None:
        """Our touched item's bytes changed: the transcript it kept is not theirs;
        raises LeaseLost."""
        self._queue.touch(
            item_id,
            lease_token=lease_token,
            text=None,
            machine_text=None,
            duration_ms=None,
            chunk_count=None,
            extras=None,
            flags=None,
            done_at=None,
        )

    def skip_item(
        self,
        item_id: int,
        *,
        lease_token: str | None,
        reason_kind: str,
        reason: str,
        duration_ms: int | None = None,
    ) -> None:
        """Mark our item skipped (silent, empty...) with the reason; raises LeaseLost."""
        self._settle(
            item_id,
            lease_token=lease_token,
            **ended_with_error("skipped", error_kind=reason_kind, message=reason, retryable=False),
            duration_ms=duration_ms,
            next_attempt_at=None,
            done_at=clock.host_now(),
        )

    def fail_item(
        self,
        item_id: int,
        *,
        lease_token: str | None,
        error_kind: str,
        message: str,
        retryable: bool,
        next_attempt_at: datetime | None,
    ) -> None:
        """Mark our item failed with its error and when it may be retried; raises LeaseLost."""
        self._settle(
            item_id,
            lease_token=lease_token,
            **ended_with_error(
                "failed", error_kind=error_kind, message=message, retryable=retryable
            ),
            next_attempt_at=next_attempt_at,
        )

    def _settle(self, item_id: int, *, lease_token: str | None, **values: Any) -> None:
        self._queue.settle(item_id, lease_token=lease_token, **values)
