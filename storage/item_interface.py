"""Items as the pipeline sees them: three Protocols, no SQLAlchemy.

Items have three repositories, not one chain: what a listing or a rerun writes
(`uow.items`, storage/items.py), what the holder of a claim does (`uow.claims`,
storage/claims.py) and what readers ask (`uow.item_queries`, storage/queries.py).
storage/interface.py's UnitOfWork gathers them with the other repositories.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from storage.records import (
    ExportRow,
    ItemRecord,
    RegisterResult,
    SkippedFile,
    SourceFile,
    StatusCount,
)

__all__ = ["ClaimRepository", "ItemQueryRepository", "ItemRepository"]


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
