"""One claimed file's whole life in the store, through one object bound to its claim.

A `FileRecorder` holds the item, its claim (lease token) and its lease (the batch's
LeaseKeeper), so the code that transcribes never passes an id or a token: it settles
the content (fingerprint and reuse decision), records chunk answers (journaled when
the store stays down), then skips, fails, finishes or releases the file. Every store
call runs in a worker thread, never on the event loop.

Store calls per file: one to settle the content (fingerprint, reuse decision, the
answered chunks, and the finish of a reused transcript), one per chunk answer, one to
settle the file. Each is a call in a group commit shared with the other files in
flight (tasks/work/group_commit.py): a busy run commits many calls at once. The file's
end is submitted with its last answer, so the two share a commit (one per file saved). A chunk
answer is journaled until its group commits (tasks/work/paid_answers.py): a crash
never pays for it twice.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from config.errors import MedasrError
from service.client import Transcription
from storage.interface import UnitOfWork, UnitOfWorkFactory
from storage.records import ItemRecord
from storage.sources import Fingerprint
from tasks.audio import Chunk
from tasks.transcription.reuse import (
    ContentInFlight,
    ReuseDecision,
    decide_reuse,
    read_reuse_facts,
    reused_extras,
)
from tasks.work.group_commit import GroupWriter
from tasks.work.journal import Journal, PaidChunk
from tasks.work.lease_keeper import LeaseKeeper
from tasks.work.paid_answers import store_chunk_answer

T = TypeVar("T")


@dataclass(frozen=True)
class FileEnd:
    """A finished file's transcript as the store keeps it (FileRecorder.finish's fields)."""

    text: str
    duration_ms: int
    chunk_count: int
    extras: Mapping[str, Any]
    flags: Sequence[str]
    hold_for_review: bool = False


class FileRecorder:
    """The store side of one claimed file: its item, its claim and its lease."""

    def __init__(
        self,
        item: ItemRecord,
        *,
        store: UnitOfWorkFactory,
        leases: LeaseKeeper,
        journal: Journal,
        store_retry_s: float,
        in_flight: ContentInFlight | None = None,
        writer: GroupWriter | None = None,
    ) -> None:
        self.item = item
        self.sha256: str | None = None  # the content fingerprint, once settled
        self._store = store
        self._leases = leases
        self._journal = journal
        self._store_retry_s = store_retry_s
        self._in_flight = in_flight if in_flight is not None else ContentInFlight()
        self._sending: str | None = None  # the content this file sends for its copies
        self._writer = writer if writer is not None else GroupWriter(store)

    async def require_lease(self) -> None:
        """Return while the claim is safely ours (waits for a renewal); raises LeaseLost."""
        await self._leases.require(self.item)

    def let_go(self) -> None:
        """Stop renewing the claim (the file is settled, released or lost); copies waiting
        for this file's answer decide again."""
        self._leases.let_go(self.item)
        if self._sending is not None:
            self._in_flight.settle(sha256=self._sending, language=self.item.language)
            self._sending = None

    async def settle_content(self, print_: Fingerprint) -> ReuseDecision:
        """In one transaction: decide reuse, void changed content's chunks, record the
        fingerprint, and finish the item from a known transcript if there is one (or settle
        it purged again when its purged content is unchanged).

        When another file of this run is sending the same content, wait until it is
        settled and decide again (its transcript is then reused). Raises LeaseLost or
        StoreError."""
        self.sha256 = print_.sha256
        while True:
            with self._leases.settling(self.item):  # it may finish the item from a twin
                decision = await self._call(lambda uow: self._settle_content(uow, print_))
                if decision.settled:
                    self.let_go()
                    return decision
            sending = self._in_flight.claim(sha256=print_.sha256, language=self.item.language)
            if sending is None:
                self._sending = print_.sha256
                return decision
            await sending.wait()  # the lease keeper renews our claim meanwhile
            await self.require_lease()

    def _settle_content(self, uow: UnitOfWork, print_: Fingerprint) -> ReuseDecision:
        item = self.item
        facts = read_reuse_facts(uow, item, sha256=print_.sha256, language=item.language)
        decision = decide_reuse(item, sha256=print_.sha256, facts=facts)
        if decision.stays_purged:
            uow.claims.keep_purged(item.id, lease_token=self._token)
            return decision
        touched = (item.extras or {}).get("touched")
        if decision.stays_as_was:
            uow.claims.keep_result(item.id, lease_token=self._token, extras=item.extras)
            return decision
        if touched is not None:  # touched, and other bytes: what it held is not theirs
            uow.claims.forget_result(item.id, lease_token=self._token)
        if decision.reset_chunks:
            uow.chunks.reset_chunks(item.id)
        uow.claims.set_fingerprint(  # the decision compared it with the claim's and reset
            item.id,
            sha256=print_.sha256,
            size_bytes=print_.size_bytes,
            lease_token=self._token,
            checked_content=True,
        )
        known = decision.transcript
        if known is not None and known.text is not None:
            uow.claims.finish_item(
                item.id,
                lease_token=self._token,
                text=known.text,
                duration_ms=known.duration_ms,
                chunk_count=known.chunk_count or 0,
                extras=reused_extras(item, known),
            )
        return decision

    async def record_chunk(
        self, chunk: Chunk, result: Transcription, *, end: FileEnd | None = None
    ) -> bool:
        """Commit one chunk's answer under the claim, retried while the store is busy; a
        paid answer goes to the journal if the store stays down (then StoreUnavailable).

        With `end` (this is the file's last answer) the item is finished in the same
        commit: True when it was (the claim is let go), False when the caller must still
        `finish` (the end failed on its own, or the answer took a second attempt)."""
        extras = {k: v for k, v in result.extras.items() if k != "text"}
        txn_id = extras.get("txn_id")
        answer = PaidChunk(
            item_id=self.item.id,
            source_uri=self.item.source_uri,
            sha256=self.sha256,
            index=chunk.index,
            start_ms=chunk.start_ms,
            end_ms=chunk.end_ms,
            size_bytes=len(chunk.wav),
            text=result.text,
            attempts=result.attempts,
            txn_id=None if txn_id is None else str(txn_id),
            latency_ms=result.latency_ms,
        )
        with self._leases.settling(self.item) if end is not None else nullcontext():
            ended = await store_chunk_answer(
                self._writer,
                answer,
                lease_token=self._token,
                silent=chunk.silent,
                journal=self._journal,
                retry_s=self._store_retry_s,
                alongside=None if end is None else self._finish_call(end),
            )
            if ended is None or ended.cancelled() or ended.exception() is not None:
                return False
            self.let_go()
            return True

    async def finish(self, end: FileEnd) -> None:
        """Mark the item done (needs_review when flagged or all wait for a person) with its
        transcript."""
        await self._end_claim(self._finish_call(end))

    def _finish_call(self, end: FileEnd) -> Callable[[UnitOfWork], None]:
        def write(uow: UnitOfWork) -> None:
            uow.claims.finish_item(
                self.item.id,
                lease_token=self._token,
                text=end.text,
                duration_ms=end.duration_ms,
                chunk_count=end.chunk_count,
                extras=end.extras,
                flags=end.flags,
                hold_for_review=end.hold_for_review,
            )

        return write

    async def skip(self, *, reason_kind: str, reason: str) -> None:
        """Mark the item skipped (silent) with the reason."""
        await self._end_claim(
            lambda uow: uow.claims.skip_item(
                self.item.id, lease_token=self._token, reason_kind=reason_kind, reason=reason
            )
        )

    async def fail(self, error: MedasrError, *, retry_at: datetime) -> None:
        """Mark the item failed; a transient error may be retried from `retry_at`."""
        await self._end_claim(
            lambda uow: uow.claims.fail_item(
                self.item.id,
                lease_token=self._token,
                error_kind=error.kind,
                message=error.message,
                retryable=error.transient,
                next_attempt_at=retry_at if error.transient else None,
            )
        )

    async def release(self) -> None:
        """Give the claim back untouched (the run stopped; not the file's fault)."""
        token = self._token
        if token is not None:
            await self._end_claim(lambda uow: uow.claims.release_items([token]))

    @property
    def _token(self) -> str | None:
        return self.item.lease_token

    async def _end_claim(self, call: Callable[[UnitOfWork], object]) -> None:
        """A write that ends the claim; the lease keeper lets it go as soon as it commits,
        so a renewal on its way does not take its end for a takeover."""
        with self._leases.settling(self.item):
            await self._call(call)
            self.let_go()

    async def _call(self, call: Callable[[UnitOfWork], T]) -> T:
        return await self._writer.write(call)
