"""Retention as the faces see it (`uow.retention`): which recordings a purge takes, and the
purge of their patient data (storage/retention.py says what is removed and what is kept)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from storage.retention_records import KeptCount, PurgedItem, PurgeSelection

__all__ = ["RetentionRepository"]


class RetentionRepository(Protocol):
    """Purge candidates and the purge itself."""

    def purgeable_ids(self, selection: PurgeSelection, *, after_id: int, limit: int) -> list[int]:
        """Up to `limit` ids of items the selection takes, above `after_id`, in id order."""
        ...

    def kept_counts(self, selection: PurgeSelection) -> list[KeptCount]:
        """Items old enough that the selection keeps, by reason and language."""
        ...

    def purge_items(
        self, item_ids: Sequence[int], *, purged_by: str, receipt_key: bytes
    ) -> list[PurgedItem]:
        """Remove the patient data of these items; returns what was purged, in id order.
        `receipt_key`: the key of the receipt's keyed hashes (kept outside the store)."""
        ...

    def delivery_ids_of(self, item_ids: Sequence[int]) -> list[int]:
        """The ids of these items' deliveries."""
        ...
