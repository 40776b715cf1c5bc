"""The store as the pipeline sees it: a unit of work of small repositories, no SQLAlchemy.

`open_store(settings.storage)` (storage/__init__.py) returns a `UnitOfWorkFactory`;
`with store.unit_of_work() as uow:` is one transaction (committed when the block ends
normally, rolled back on an error) over `uow.items`, `uow.claims`, `uow.item_queries`,
`uow.chunks`, `uow.deliveries`, `uow.delivery_claims`, `uow.runs`, `uow.listings`,
`uow.reviews`, `uow.audit` (storage/audit_interface.py) and `uow.retention`, each behind
its Protocol. Items have three repositories, not one chain (storage/item_interface.py):
what a listing or a rerun writes (`items`), what the holder of a claim does (`claims`)
and what readers ask (`item_queries`); deliveries two (storage/delivery_interface.py):
planned and read (`deliveries`), and under a claim (`delivery_claims`). The SQL store
(storage/database.py, storage/unit_of_work.py) satisfies them structurally, checked by
mypy where `open_store` returns it; the tests use it too, on SQLite in a temporary
folder (docs/DESIGN.md §10).

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
from storage.delivery_interface import DeliveryClaimRepository, DeliveryRepository
from storage.item_interface import ClaimRepository, ItemQueryRepository, ItemRepository
from storage.records import (
    ChunkRecord,
    ItemRecord,
    NotAudioListing,
    PendingAudio,
    QueueSize,
    RunRecord,
    SentRecording,
)
from storage.retention_interface import RetentionRepository

__all__ = [
    "AuditRepository",
    "ChunkRepository",
    "ClaimRepository",
    "DeliveryClaimRepository",
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

    def queue_size(self, *, language: str | None = None) -> QueueSize:
        """How many recordings wait for review (of `language`) and since when the oldest
        has waited."""
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
        """Recordings that sent a request or are done (a copy done by content reuse
        sent none), finished (or last changed) in [since, until), with their requests
        and billed ms (each attempt at least `billed_min_ms`)."""
        ...

    def has_column(self, column: str) -> bool:
        """Whether any recording's manifest columns (its metadata) hold `column`."""
        ...

    def columns(self) -> set[str]:
        """Every manifest column some recording holds."""
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
        """Transcript versions to deliver: planned and read."""
        ...

    @property
    def delivery_claims(self) -> DeliveryClaimRepository:
        """Deliveries under a claim: sent and settled."""
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
