"""The store as the pipeline sees it: a unit of work of small repositories, no SQLAlchemy.

`open_store(settings.storage)` (storage/__init__.py) returns a `UnitOfWorkFactory`;
`with store.unit_of_work() as uow:` is one transaction (committed when the block ends
normally, rolled back on an error) over `uow.items`, `uow.claims`, `uow.item_queries`,
`uow.chunks`, `uow.deliveries`, `uow.runs`, `uow.listings`, `uow.reviews`, `uow.audit`
(storage/audit_interface.py) and `uow.retention`, each behind its Protocol. Items have
three repositories, not one chain: what a listing or a rerun writes (`items`), what the
holder of a claim does (`claims`) and what readers ask (`item_queries`). The SQL store
(storage/database.py, storage/unit_of_work.py) satisfies them structurally; so does the
in-memory fake of the unit tests (tests/fakes/store.py), which a conformance test keeps
honest for every Protocol.

Every write under a claim takes its lease token and raises LeaseLost when the claim is
no longer current; a store that cannot be reached raises StoreUnavailable (transient),
one that refuses raises StoreFailed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol

from storage.accuracy_interface import AccuracyRepository
from storage.audit_interface import AuditRepository
from storage.delivery_interface import DeliveryRepository
from storage.records import (
    ChunkRecord,
    ExportRow,
    ItemRecord,
    NotAudioListing,
    PendingAudio,
    QueueSize,
    RegisterResult,
    RunRecord,
    SentRecording,
    SkippedFile,
    SourceFile,
    StatusCount,
)
from storage.retention_interface import RetentionRepository

__all__ = [
    "AuditRepository",
    "ChunkRepository",
    "ClaimRepository",
    "DeliveryRepository",
    "ItemQueryRepository",
    "ItemRepository",
    "ListingRepository",
    "RetentionRepository",
    "ReviewRepository",
    "RunRepository",
    "UnitOfWork",
    "UnitOfWorkFactory",
]


class ItemRepository(Protocol):
    """Items (recordings in a language) written outside a claim: listings, metadata, re-queueing."""

    def register_items(self, files: Sequence[SourceFile], *, language: str) -> RegisterResult:
        """Upsert listed files: new -> pending; changed -> back to pending."""
        ...

    def record_unreadable(self, files: Sequence[SkippedFile], *, language: str) -> int:
        """Record listed files that cannot be read as failed (source_unreadable, permanent)."""
        ...

    def resolve_listed_folders(self, *, root: str, unlisted: Sequence[str], language: str) -> int:
        """Remove the rows of folders under `root` that were listed this time."""
        ...

    def set_item_metadata(
        self, metadata_by_uri: Mapping[str, Mapping[str, str]], *, language: str | None
    ) -> int:
        """Store the manifest's columns on the items (of `language`); returns rows changed."""
        ...

    def requeue_failures(
        self,
        *,
        language: str | None,
        max_attempts: int,
        include_permanent: bool,
        include_skipped: bool = False,
        now: datetime | None = None,
    ) -> int:
        """Send failures back to pending; returns how many."""
        ...


class ClaimRepository(Protocol):
    """The holder of a claim on items: claim, renew, settle, release (the work queue's face)."""

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
        """Claim up to `limit` pending (or lease-expired) items, oldest first; attempts += 1."""
        ...

    def renew_leases(self, lease_tokens: Sequence[str], *, lease_s: float) -> frozenset[str]:
        """Extend the leases of these claims to `lease_s` from the store's now; returns the"""
        ...

    def release_items(self, lease_tokens: Sequence[str]) -> None:
        """Give our claims back (pending, attempts - 1): the stop was not the item's fault."""
        ...

    def release_dead_local_leases(self) -> int:
        """Give back items held by ended processes of this machine; returns how many."""
        ...

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

        `checked_content`: the caller reset the chunks of changed content itself; the
        stored fingerprint is not read again (one write).
        """
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
        hold_for_review: bool = False,
    ) -> None:
        """Mark our item done with its transcript, or needs_review when the quality gate"""
        ...

    def keep_purged(self, item_id: int, *, lease_token: str | None) -> None:
        """Settle our purged item purged again (same bytes); raises LeaseLost."""
        ...

    def keep_result(
        self, item_id: int, *, lease_token: str | None, extras: Mapping[str, Any]
    ) -> None:
        """Settle our touched item as it was (same bytes); raises LeaseLost."""
        ...

    def forget_result(self, item_id: int, *, lease_token: str | None) -> None:
        """Our touched item's bytes changed: forget the result it kept; raises LeaseLost."""
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
        """Mark our item skipped (silent, empty...) with the reason; raises LeaseLost."""
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
        """Mark our item failed with its error and when it may be retried; raises LeaseLost."""
        ...


class ItemQueryRepository(Protocol):
    """Items as readers see them: by id or source, pages, counts, exports."""

    def get_item(self, item_id: int) -> ItemRecord | None:
        """One item by id."""
        ...

    def find_item(self, *, source_uri: str, language: str) -> ItemRecord | None:
        """One item by its source URI and language."""
        ...

    def find_items(self, *, source_uris: Sequence[str], language: str) -> dict[str, ItemRecord]:
        """Items of `language` by source URI, many URIs per query (unknown ones left out)."""
        ...

    def find_unsettled(
        self, files: Sequence[SourceFile], *, language: str, settled: Sequence[str]
    ) -> list[str]:
        """URIs of listed files that are new, changed, or not in a `settled` status."""
        ...

    def find_done_with_sha(self, *, sha256: str, language: str) -> ItemRecord | None:
        """The latest done item with this content and language, if any."""
        ...

    def done_items_page(
        self, *, language: str | None, after_id: int, limit: int, status: str = "done"
    ) -> list[ItemRecord]:
        """Up to `limit` items with `status` (of `language`) whose id is above `after_id`."""
        ...

    def status_counts(self) -> list[StatusCount]:
        """Items and known audio (ms) by status and language."""
        ...

    def pending_count(self, *, language: str | None, source_prefix: str | None = None) -> int:
        """How many items wait to be claimed (of `language`, under `source_prefix`)."""
        ...

    def list_failures(self, *, limit: int = 20) -> list[ItemRecord]:
        """The latest failed items, newest first."""
        ...

    def list_latest(self, *, status: str, limit: int = 20) -> list[ItemRecord]:
        """The latest items with `status` (failed, skipped...), newest first."""
        ...

    def export_rows(
        self, *, status: str | None = None, language: str | None = None
    ) -> Iterator[ExportRow]:
        """Every item (or those with `status`, in `language`) sorted by source, streamed."""
        ...

    def export_keys(self) -> Iterator[tuple[str, str]]:
        """Every item's (source URI, language), oldest item first, streamed."""
        ...

    def source_uris(self) -> Iterator[str]:
        """Every item's source URI (all statuses and languages, duplicates possible), streamed."""
        ...


class ChunkRepository(Protocol):
    """Chunks of items: finished ones are never sent again."""

    def done_chunks(self, item_id: int) -> dict[int, ChunkRecord]:
        """Finished chunks of an item (done or silent), by index: never send these again."""
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
        """Insert or replace one chunk's result while our claim holds the item; else LeaseLost."""
        ...

    def record_recovered_chunk(
        self, item_id: int, *, source_uri: str, sha256: str | None, **chunk: Any
    ) -> bool:
        """Record a paid answer kept in the journal (no lease: its worker is gone)."""
        ...


class RunRepository(Protocol):
    """Runs of a flow over a source, with their counts."""

    def start_run(self, *, source: str, language: str) -> int:
        """Record the start of a run; returns its id."""
        ...

    def finish_run(self, run_id: int, *, counts: Mapping[str, int], status: str) -> None:
        """Record a run's end, status and counts (unknown count names kept aside)."""
        ...

    def run_sources(self) -> list[str]:
        """Every source a run was recorded over or a listing noted, sorted."""
        ...

    def latest_runs(self, *, limit: int = 5) -> list[RunRecord]:
        """The latest runs, newest first."""
        ...


class ListingRepository(Protocol):
    """Sources listed, and the files their latest listing ignored as not audio."""

    def note_source(self, uri: str) -> int:
        """The id of the listed source `uri`, recorded now if it is new."""
        ...

    def record_not_audio(
        self, uri: str, *, count: int, by_reason: Mapping[str, int], names: Sequence[str]
    ) -> None:
        """Replace what the source's latest listing ignored as not audio."""
        ...

    def not_audio(self) -> list[NotAudioListing]:
        """Each source whose latest listing ignored files as not audio, by URI."""
        ...

    def forget_not_audio(self) -> int:
        """Remove every not-audio name and count (a purge); returns the names removed."""
        ...

    def sources(self) -> list[str]:
        """Every source listed, sorted."""
        ...


class ReviewRepository(Protocol):
    """Items the quality gate flagged: list, accept, re-queue."""

    def list_needs_review(self, *, language: str | None = None, limit: int = 0) -> list[ItemRecord]:
        """Items waiting for review (of `language`), oldest first; `limit` 0 means all."""
        ...

    def accept_review(self, item_id: int, *, by: str | None = None) -> ItemRecord:
        """needs_review -> done with its transcript; raises NotUnderReview otherwise."""
        ...

    def resend_review(self, item_id: int) -> ItemRecord:
        """needs_review -> pending, transcript and chunks forgotten; raises NotUnderReview."""
        ...

    def queue_size(self) -> QueueSize:
        """How many recordings wait for review and since when the oldest has waited."""
        ...


class SpendRepository(Protocol):
    """What was sent, per recording (`medasr status --by`)."""

    def sent_recordings(
        self,
        *,
        billed_min_ms: int,
        since: datetime | None = None,
        until: datetime | None = None,
        language: str | None = None,
    ) -> Iterator[SentRecording]:
        """Recordings that sent a request, finished (or last changed) in [since, until),
        with their requests and billed ms (each attempt at least `billed_min_ms`)."""
        ...

    def pending_audio(self, *, language: str | None, source_prefix: str | None) -> PendingAudio:
        """Recordings waiting to be claimed, with their stored audio length or size."""
        ...


class UnitOfWork(Protocol):
    """One transaction's repositories."""

    @property
    def items(self) -> ItemRepository:
        """Recordings in a language, as listings and reruns write them."""
        ...

    @property
    def claims(self) -> ClaimRepository:
        """Claims on recordings: the work queue's face."""
        ...

    @property
    def item_queries(self) -> ItemQueryRepository:
        """Recordings in a language, read."""
        ...

    @property
    def chunks(self) -> ChunkRepository:
        """Chunks of recordings."""
        ...

    @property
    def deliveries(self) -> DeliveryRepository:
        """Transcript versions to deliver."""
        ...

    @property
    def runs(self) -> RunRepository:
        """Runs of flows."""
        ...

    @property
    def listings(self) -> ListingRepository:
        """Sources listed and what they ignored as not audio."""
        ...

    @property
    def reviews(self) -> ReviewRepository:
        """Items waiting for a person."""
        ...

    @property
    def audit(self) -> AuditRepository:
        """The append-only audit trail."""
        ...

    @property
    def retention(self) -> RetentionRepository:
        """Purge candidates and the purge of their patient data."""
        ...

    @property
    def accuracy(self) -> AccuracyRepository:
        """Reviewed notes' word figures (the `measured` review routing reads them)."""
        ...

    @property
    def spend(self) -> SpendRepository:
        """What recordings cost: requests and billed audio as sent."""
        ...

    def commit(self) -> None:
        """Commit now; the next statement starts a new transaction."""
        ...

    def savepoint(self) -> AbstractContextManager[None]:
        """A savepoint: an error in the block undoes the block's writes only (raised)."""
        ...


class UnitOfWorkFactory(Protocol):
    """An opened store: one unit of work (one transaction) per block."""

    def unit_of_work(self, *, read_only: bool = False) -> AbstractContextManager[UnitOfWork]:
        """A unit of work on a fresh transaction; raises StoreUnavailable or StoreFailed."""
        ...

    def reclaim_space(self) -> str:
        """Give back and overwrite the space of deleted rows (after a purge); returns what
        was done, a sentence."""
        ...

    def dispose(self) -> None:
        """Close every pooled connection."""
        ...
