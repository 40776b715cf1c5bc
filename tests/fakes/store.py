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
from datetime import UTC, datetime, timedelta
from typing import Any

from storage.audit_records import AuditEvent
from storage.errors import LeaseLost, StoreUnavailable
from storage.records import (
    ChunkRecord,
    DeliveryRecord,
    ItemRecord,
    NotAudioListing,
    RegisterResult,
    RunRecord,
    SourceFile,
)
from tests.fakes.audit import FakeAudit, FakeRetention
from tests.fakes.item_listing import FakeItemListing
from tests.fakes.item_queries import FakeItemQueries
from tests.fakes.ledgers import FakeDeliveries, FakeListings, FakeReviews, FakeRuns

_FINISHED_CHUNKS = ("done", "silent")
_NO_LEASE: dict[str, Any] = {"lease_owner": None, "lease_expires_at": None, "lease_token": None}


def _now() -> datetime:
    return datetime.now(UTC)


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
    """Hands out FakeRepository transactions over one in-memory state."""

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
    """The repositories of one fake transaction (items and chunks share one object)."""

    def __init__(self, state: _State) -> None:
        self._state = state
        self.items = self.chunks = FakeRepository(state)
        self.runs = FakeRuns(state)
        self.listings = FakeListings(state)
        self.reviews = FakeReviews(state)
        self.deliveries = FakeDeliveries(state)
        self.audit = FakeAudit(state.audit_events)
        self.retention = FakeRetention(state.items)

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


class FakeRepository(FakeItemQueries, FakeItemListing):
    """ItemRepository and ChunkRepository over a working copy of the state."""

    def __init__(self, state: _State) -> None:
        self._s = state

    # --- registering and claiming ------------------------------------------------------

    def register_items(self, files: Sequence[SourceFile], *, language: str) -> RegisterResult:
        new = changed = unchanged = 0
        now = _now()
        for listed in {f.uri: f for f in files}.values():
            known = self._find(listed.uri, language)
            if known is None:
                self._insert(listed, language=language, now=now)
                new += 1
            elif (known.source_version, known.size_bytes) == (listed.version, listed.size_bytes):
                unchanged += 1
            else:
                changed += 1
                if not _leased(known, now=now):
                    self._put(_back_to_pending(known, listed, now=now))
        return RegisterResult(new=new, changed=changed, unchanged=unchanged)

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
        now = now or _now()
        if limit <= 0:
            return []

        def wanted(item: ItemRecord) -> bool:
            return (
                (language is None or item.language == language)
                and (uris is None or item.source_uri in uris)
                and (source_prefix is None or _under(item.source_uri, source_prefix))
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
            self._put(item)
        return sorted(claimed, key=lambda i: i.id)

    def renew_leases(self, lease_tokens: Sequence[str], *, lease_s: float) -> frozenset[str]:
        expires = _now() + timedelta(seconds=lease_s)
        renewed = set()
        for item in list(self._s.items.values()):
            if item.status == "processing" and item.lease_token in lease_tokens:
                self._put(replace(item, lease_expires_at=expires))
                renewed.add(item.lease_token)
        return frozenset(lease_tokens) - renewed

    def release_items(self, lease_tokens: Sequence[str]) -> None:
        for item in list(self._s.items.values()):
            if item.status == "processing" and item.lease_token in lease_tokens:
                attempts = max(item.attempts - 1, 0)
                self._put(
                    replace(
                        item, status="pending", attempts=attempts, updated_at=_now(), **_NO_LEASE
                    )
                )

    # --- reading -----------------------------------------------------------------------

    def done_chunks(self, item_id: int) -> dict[int, ChunkRecord]:
        return {
            index: chunk
            for (owner, index), chunk in sorted(self._s.chunks.items())
            if owner == item_id and chunk.status in _FINISHED_CHUNKS
        }

    # --- writing under a claim ---------------------------------------------------------

    def set_fingerprint(
        self, item_id: int, *, sha256: str, size_bytes: int, lease_token: str | None
    ) -> None:
        item = self._held(item_id, lease_token)
        if item.sha256 is not None and item.sha256 != sha256:
            self.reset_chunks(item_id)
        self._put(replace(item, sha256=sha256, size_bytes=size_bytes, updated_at=_now()))

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
        self._held(item_id, lease_token)
        self._s.chunks[(item_id, index)] = ChunkRecord(
            item_id, index, start_ms, end_ms, size_bytes, status, text, attempts, txn_id,
            latency_ms, _now(),
        )  # fmt: skip

    def record_recovered_chunk(
        self, item_id: int, *, source_uri: str, sha256: str | None, **chunk: Any
    ) -> bool:
        item = self._s.items.get(item_id)
        if item is None or item.status == "done" or sha256 is None:
            return False
        if (item.source_uri, item.sha256) != (source_uri, sha256):
            return False
        record = ChunkRecord(item_id=item_id, status="done", updated_at=_now(), **chunk)
        self._s.chunks[(item_id, record.index)] = record
        return True

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
            done_at=_now(),
            error_kind=None,
            error_message=None,
            retryable=False,
            next_attempt_at=None,
        )

    def keep_purged(self, item_id: int, *, lease_token: str | None) -> None:
        self._settle(item_id, lease_token, status="purged", attempts=0)

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
            done_at=_now(),
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

    # --- helpers -------------------------------------------------------------------------

    def _settle(self, item_id: int, lease_token: str | None, **values: Any) -> None:
        item = self._held(item_id, lease_token)
        self._put(replace(item, updated_at=_now(), **_NO_LEASE, **values))

    def _held(self, item_id: int, lease_token: str | None) -> ItemRecord:
        item = self._s.items.get(item_id)
        if (
            item is None
            or lease_token is None
            or (item.status, item.lease_token) != ("processing", lease_token)
        ):
            raise LeaseLost(f"item {item_id} is no longer held by this worker")
        return item

    def _find(self, uri: str, language: str) -> ItemRecord | None:
        for item in self._s.items.values():
            if (item.source_uri, item.language) == (uri, language):
                return item
        return None

    def _insert(self, listed: SourceFile, *, language: str, now: datetime) -> None:
        item_id, self._s.next_id = self._s.next_id, self._s.next_id + 1
        empty: dict[str, Any] = dict.fromkeys(
            ("sha256", "duration_ms", "error_kind", "error_message", "next_attempt_at",
             "lease_owner", "lease_expires_at", "text", "chunk_count", "done_at")
        )  # fmt: skip
        self._put(
            ItemRecord(
                id=item_id,
                source_uri=listed.uri,
                language=language,
                source_version=listed.version,
                size_bytes=listed.size_bytes,
                status="pending",
                retryable=False,
                attempts=0,
                extras={},
                created_at=now,
                updated_at=now,
                **empty,
            )
        )

    def _put(self, item: ItemRecord) -> None:
        self._s.items[item.id] = item


def _leased(item: ItemRecord, *, now: datetime) -> bool:
    expires = item.lease_expires_at
    return item.status == "processing" and expires is not None and expires > now


def _under(uri: str, prefix: str) -> bool:
    return uri == (prefix.rstrip("/") or prefix) or uri.startswith(prefix.rstrip("/") + "/")


def _back_to_pending(item: ItemRecord, listed: SourceFile, *, now: datetime) -> ItemRecord:
    return replace(
        item,
        source_version=listed.version,
        size_bytes=listed.size_bytes,
        status="pending",
        attempts=0,
        error_kind=None,
        error_message=None,
        retryable=False,
        next_attempt_at=None,
        text=None,
        duration_ms=None,
        chunk_count=None,
        extras={},
        flags=[],
        done_at=None,
        updated_at=now,
        **_NO_LEASE,
    )
