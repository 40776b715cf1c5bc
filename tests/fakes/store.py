"""An in-memory store implementing storage.interface (UnitOfWorkFactory and its repositories).

For the fast unit tier: tests of tasks/ (the recorder, transcribe_file's outcomes, the
dry run) without SQLite. One lock serializes transactions (like SQLite's single
writer); a transaction works on a copy of the state and publishes it on success, so an
error rolls it back. `down = True` makes every transaction fail with StoreUnavailable
(the journal's case). `transactions` counts committed and failed transactions alike.
tests/storage/test_store_conformance.py runs one scenario against this fake and the real
SQL store so the two cannot drift.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from storage.audit_records import AuditEvent
from storage.errors import StoreUnavailable
from storage.owners import is_dead_local_owner
from storage.records import (
    ChunkRecord,
    DeliveryRecord,
    ItemRecord,
    NotAudioListing,
    RunRecord,
)
from tests.fakes.audit import FakeAudit, FakeRetention
from tests.fakes.delivery_claims import FakeDeliveryClaims
from tests.fakes.item_listing import FakeItems
from tests.fakes.item_queries import FakeItemQueries
from tests.fakes.item_rows import NO_LEASE, drop_chunks, fake_now, held_row, put_row, under
from tests.fakes.ledgers import FakeDeliveries, FakeListings, FakeReviews, FakeRuns
from tests.fakes.spend import FakeSpend

_FINISHED_CHUNKS = ("done", "silent")


@dataclass
class _State:
    items: dict[int, ItemRecord] = field(default_factory=dict)
    chunks: dict[tuple[int, int], ChunkRecord] = field(default_factory=dict)
    next_id: int = 1
    runs: dict[int, RunRecord] = field(default_factory=dict)
    listed: dict[str, NotAudioListing] = field(default_factory=dict)
    deliveries: dict[int, DeliveryRecord] = field(default_factory=dict)
    store_id: str = "FAKE0001"
    audit_events: dict[int, AuditEvent] = field(default_factory=dict)

    def copy(self) -> _State:
        return _State(**{k: dict(v) if isinstance(v, dict) else v for k, v in vars(self).items()})


class FakeStore:
    """Hands out FakeUnitOfWork transactions over one in-memory state."""

    def __init__(self) -> None:
        self.down = False
        self.transactions = 0
        self._state = _State()
        self._lock = threading.Lock()

    @contextmanager
    def unit_of_work(self, *, read_only: bool = False) -> Iterator[FakeUnitOfWork]:
        """One transaction: committed on normal exit, rolled back on error."""
        with self._lock:
            self.transactions += 1
            if self.down:
                raise StoreUnavailable("database unavailable: the fake store is down")
            work = self._state.copy()
            yield FakeUnitOfWork(work)
            if not read_only:
                self._state = work

    def dispose(self) -> None:
        """Nothing to close."""

    def reclaim_space(self) -> str:
        """Memory has no free pages to give back."""
        return "nothing to reclaim in memory"

    def items(self) -> list[ItemRecord]:
        """Every item as stored now (for assertions)."""
        return list(self._state.items.values())


class FakeUnitOfWork:
    """The repositories of one fake transaction."""

    def __init__(self, state: _State) -> None:
        self._state = state
        self.items = FakeItems(state)
        self.claims = FakeClaims(state)
        self.item_queries = FakeItemQueries(state)
        self.chunks = FakeChunks(state)
        self.runs = FakeRuns(state)
        self.listings = FakeListings(state)
        self.reviews = FakeReviews(state)
        self.deliveries = FakeDeliveries(state)
        self.delivery_claims = FakeDeliveryClaims(state)
        self.audit = FakeAudit(state.audit_events)
        self.retention = FakeRetention(state.items)
        self.accuracy = FakeAccuracy()
        self.spend = FakeSpend(state)

    def commit(self) -> None:
        """The fake publishes at the end of the block only."""

    @contextmanager
    def savepoint(self) -> Iterator[None]:
        """An error in the block puts the working copy back as it was before it."""
        saved = self._state.copy()
        try:
            yield
        except BaseException:
            vars(self._state).update(vars(saved))
            raise


class FakeClaims:
    """ClaimRepository over a working copy of the state."""

    def __init__(self, state: _State) -> None:
        self._s = state

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
        now = now or fake_now()
        if limit <= 0:
            return []

        def wanted(item: ItemRecord) -> bool:
            return (
                (language is None or item.language == language)
                and (uris is None or item.source_uri in uris)
                and (source_prefix is None or under(item.source_uri, source_prefix))
            )

        ordered = sorted(self._s.items.values(), key=lambda i: i.id)
        expired = [
            i
            for i in ordered
            if i.status == "processing"
            and i.lease_expires_at is not None
            and i.lease_expires_at < now
            and i.lease_owner != owner
        ]
        pending = [i for i in ordered if i.status == "pending"]
        chosen = [i for i in expired + pending if wanted(i)][:limit]
        claimed = [
            replace(
                i,
                status="processing",
                lease_owner=owner,
                lease_expires_at=now + timedelta(seconds=lease_s),
                lease_token=uuid.uuid4().hex,
                attempts=i.attempts + 1,
                updated_at=now,
            )
            for i in chosen
        ]
        for item in claimed:
            put_row(self._s, item)
        return sorted(claimed, key=lambda i: i.id)

    def renew_leases(self, lease_tokens: Sequence[str], *, lease_s: float) -> frozenset[str]:
        expires = fake_now() + timedelta(seconds=lease_s)
        renewed = set()
        for item in list(self._s.items.values()):
            if item.status == "processing" and item.lease_token in lease_tokens:
                put_row(self._s, replace(item, lease_expires_at=expires))
                renewed.add(item.lease_token)
        return frozenset(lease_tokens) - renewed

    def release_items(self, lease_tokens: Sequence[str]) -> None:
        for item in list(self._s.items.values()):
            if item.status == "processing" and item.lease_token in lease_tokens:
                attempts = max(item.attempts - 1, 0)
                put_row(
                    self._s,
                    replace(
                        item, status="pending", attempts=attempts, updated_at=fake_now(), **NO_LEASE
                    ),
                )

    def release_dead_local_leases(self) -> int:
        dead = [
            i
            for i in self._s.items.values()
            if i.status == "processing" and i.lease_owner and is_dead_local_owner(i.lease_owner)
        ]
        for item in dead:
            put_row(self._s, replace(item, status="pending", updated_at=fake_now(), **NO_LEASE))
        return len(dead)

    def set_fingerprint(
        self,
        item_id: int,
        *,
        sha256: str,
        size_bytes: int,
        lease_token: str | None,
        checked_content: bool = False,
    ) -> None:
        item = held_row(self._s, item_id, lease_token)
        if not checked_content and item.sha256 is not None and item.sha256 != sha256:
            drop_chunks(self._s, item_id)
        put_row(self._s, replace(item, sha256=sha256, size_bytes=size_bytes, updated_at=fake_now()))

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
        self._settle(
            item_id,
            lease_token,
            status="needs_review" if flags or hold_for_review else "done",
            flags=list(flags),
            text=text,
            duration_ms=duration_ms,
            chunk_count=chunk_count,
            extras=dict(extras),
            done_at=fake_now(),
            error_kind=None,
            error_message=None,
            retryable=False,
            next_attempt_at=None,
        )

    def keep_purged(self, item_id: int, *, lease_token: str | None) -> None:
        self._settle(item_id, lease_token, status="purged", attempts=0)

    def keep_result(
        self, item_id: int, *, lease_token: str | None, extras: Mapping[str, Any]
    ) -> None:
        kept = {k: v for k, v in extras.items() if k != "touched"}
        touched = extras["touched"]
        status, duration_ms = touched["status"], touched.get("duration_ms")
        self._settle(item_id, lease_token, status=status, duration_ms=duration_ms, extras=kept)

    def forget_result(self, item_id: int, *, lease_token: str | None) -> None:
        item = held_row(self._s, item_id, lease_token)
        forgotten = {"text": None, "machine_text": None, "duration_ms": None, "extras": {}}
        put_row(self._s, replace(item, **forgotten, chunk_count=None, flags=[], done_at=None))

    def skip_item(
        self,
        item_id: int,
        *,
        lease_token: str | None,
        reason_kind: str,
        reason: str,
        duration_ms: int | None = None,
    ) -> None:
        self._settle(
            item_id,
            lease_token,
            status="skipped",
            error_kind=reason_kind,
            error_message=reason,
            duration_ms=duration_ms,
            retryable=False,
            next_attempt_at=None,
            done_at=fake_now(),
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
        self._settle(
            item_id,
            lease_token,
            status="failed",
            error_kind=error_kind,
            error_message=message,
            retryable=retryable,
            next_attempt_at=next_attempt_at,
        )

    def _settle(self, item_id: int, lease_token: str | None, **values: Any) -> None:
        item = held_row(self._s, item_id, lease_token)
        put_row(self._s, replace(item, updated_at=fake_now(), **NO_LEASE, **values))


class FakeChunks:
    """ChunkRepository over a working copy of the state."""

    def __init__(self, state: _State) -> None:
        self._s = state

    def done_chunks(self, item_id: int) -> dict[int, ChunkRecord]:
        return {
            index: chunk
            for (owner, index), chunk in sorted(self._s.chunks.items())
            if owner == item_id and chunk.status in _FINISHED_CHUNKS
        }

    def reset_chunks(self, item_id: int) -> None:
        for key in [k for k in self._s.chunks if k[0] == item_id]:
            del self._s.chunks[key]

    def record_chunk_result(
        self,
        item_id: int,
        *,
        lease_token: str | None,
        index: int,
        start_ms: int,
        end_ms: int,
        size_bytes: int,
        text: str,
        status: str = "done",
        attempts: int = 1,
        txn_id: str | None = None,
        latency_ms: float | None = None,
    ) -> None:
        held_row(self._s, item_id, lease_token)
        self._s.chunks[(item_id, index)] = ChunkRecord(
            item_id, index, start_ms, end_ms, size_bytes, status, text, attempts, txn_id,
            latency_ms, fake_now(),
        )  # fmt: skip

    def record_recovered_chunk(
        self, item_id: int, *, source_uri: str, sha256: str | None, **chunk: Any
    ) -> bool:
        item = self._s.items.get(item_id)
        if item is None or item.status == "done" or sha256 is None:
            return False
        if (item.source_uri, item.sha256) != (source_uri, sha256):
            return False
        record = ChunkRecord(item_id=item_id, status="done", updated_at=fake_now(), **chunk)
        self._s.chunks[(item_id, record.index)] = record
        return True


class FakeAccuracy:
    """No note was ever reviewed in the fake: no standings, no figures."""

    def standings(self, *, window_notes: int) -> list[Any]:
        """Nobody is known yet."""
        return []

    def note_figures(self, selection: Any, *, metadata_column: str | None = None) -> list[Any]:
        """No note was reviewed."""
        return []
