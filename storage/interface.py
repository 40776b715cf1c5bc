"""The store as the pipeline sees it: two small Protocols, no SQLAlchemy.

`ItemStore` hands out `ItemRepository`s, one transaction each (committed when the
block ends normally, rolled back on an error). `ItemRepository` is exactly what the
transcription path calls (tasks/transcription/transcribe.py through its per-file recorder,
tasks/transcription/plan.py, tasks/work/journal.py, tasks/work/lease_keeper.py, the claim
in tasks/steps.py): register, claim,
renew, fingerprint, record chunks, settle an item, give it back. `storage.database.Store`
and `storage.repository.Repository` satisfy them structurally; so does the in-memory fake
of the unit tests (tests/fakes/store.py), which a conformance test keeps honest.

Every write under a claim takes its lease token and raises LeaseLost when the claim is
no longer current; a store that cannot be reached raises StoreUnavailable (transient),
one that refuses raises StoreFailed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol

from storage.records import ChunkRecord, ItemRecord, RegisterResult, SourceFile

__all__ = ["ItemRepository", "ItemStore"]


class ItemRepository(Protocol):
    """One transaction's view of items and chunks."""

    def register_items(self, files: Sequence[SourceFile], *, language: str) -> RegisterResult:
        """Upsert listed files: new -> pending; changed (version or size) -> back to pending."""
        ...

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
        """Claim up to `limit` pending (or lease-expired) items, each with its own lease token."""
        ...

    def renew_leases(self, lease_tokens: Sequence[str], *, lease_s: float) -> frozenset[str]:
        """Extend these claims' leases; returns the tokens no longer held."""
        ...

    def release_items(self, lease_tokens: Sequence[str]) -> None:
        """Give these claims back untouched (pending, attempts - 1)."""
        ...

    def get_item(self, item_id: int) -> ItemRecord | None:
        """One item by id."""
        ...

    def find_items(self, *, source_uris: Sequence[str], language: str) -> dict[str, ItemRecord]:
        """Items of `language` by source URI (unknown ones left out)."""
        ...

    def find_unsettled(
        self, files: Sequence[SourceFile], *, language: str, settled: Sequence[str]
    ) -> list[str]:
        """URIs of listed files that are new, changed, or not in a `settled` status."""
        ...

    def find_done_with_sha(self, *, sha256: str, language: str) -> ItemRecord | None:
        """The latest done item with this content and language, if any."""
        ...

    def done_chunks(self, item_id: int) -> dict[int, ChunkRecord]:
        """Finished chunks (done or silent) of an item, by index."""
        ...

    def set_fingerprint(
        self, item_id: int, *, sha256: str, size_bytes: int, lease_token: str | None
    ) -> None:
        """Record the content fingerprint under our claim; raises LeaseLost."""
        ...

    def reset_chunks(self, item_id: int) -> None:
        """Forget an item's chunks (its content changed)."""
        ...

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
        """Insert or replace one chunk's result under our claim; raises LeaseLost."""
        ...

    def record_recovered_chunk(
        self, item_id: int, *, source_uri: str, sha256: str | None, **chunk: Any
    ) -> bool:
        """Record a journaled answer if the item still has that content; False if not."""
        ...

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
    ) -> None:
        """Mark our item done (needs_review when flagged); raises LeaseLost."""
        ...

    def skip_item(
        self,
        item_id: int,
        *,
        lease_token: str | None,
        reason_kind: str,
        reason: str,
        duration_ms: int | None = None,
    ) -> None:
        """Mark our item skipped with the reason; raises LeaseLost."""
        ...

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
        """Mark our item failed and when it may be retried; raises LeaseLost."""
        ...


class ItemStore(Protocol):
    """An opened store: one repository (one transaction) per block."""

    def repository(self, *, read_only: bool = False) -> AbstractContextManager[ItemRepository]:
        """A repository on a fresh transaction; raises StoreUnavailable or StoreFailed."""
        ...
