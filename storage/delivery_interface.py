"""The delivery queue as the pipeline sees it: two Protocols, no SQLAlchemy.

`uow.deliveries` (plan, send back, read) and `uow.delivery_claims` (what the holder of a
claim does) of storage/interface.py's UnitOfWork satisfy them; the SQL side is
storage/deliveries.py and storage/delivery_claims.py on the one work queue
(storage/work_queue.py). Writes under a claim take its lease token (LeaseLost
otherwise).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from storage.records import DeliveryCount, DeliveryRecord, SentIdentity, WantedDelivery

__all__ = ["DeliveryClaimRepository", "DeliveryRepository"]


class DeliveryRepository(Protocol):
    """Deliveries: plan, send back, read."""

    def plan_deliveries(self, wanted: Sequence[WantedDelivery], *, format_name: str) -> int:
        """Add a pending row for each version not seen yet; returns how many were added."""
        ...

    def requeue_delivery_failures(self, *, max_attempts: int) -> int:
        """Send retryable failed deliveries under `max_attempts` back to pending; how many."""
        ...

    def resend_in_doubt(self, *, language: str | None = None, target: str | None = None) -> int:
        """A person's decision: in-doubt deliveries (of `language`) go out again; how many."""
        ...

    def in_doubt_deliveries(
        self, *, language: str | None = None, target: str | None = None
    ) -> list[DeliveryRecord]:
        """The in-doubt deliveries (of `language`, to `target`) `resend_in_doubt` takes."""
        ...

    def store_identity(self) -> str:
        """This store's own name (made once per database by a migration)."""
        ...

    def get_delivery(self, delivery_id: int) -> DeliveryRecord | None:
        """One delivery row by id."""
        ...

    def latest_delivered_before(self, delivery_id: int) -> DeliveryRecord | None:
        """The newest delivered row of the same item and target, older than this one."""
        ...

    def deliveries_of_item(self, item_id: int) -> list[DeliveryRecord]:
        """Every delivery row of one item, oldest first."""
        ...

    def delivered_versions(
        self, item_ids: Sequence[int], *, target: str | None = None
    ) -> dict[int, list[str]]:
        """Versions delivered per item (to `target`), oldest first (items with none left out)."""
        ...

    def delivered_filings(self, item_ids: Sequence[int]) -> dict[int, list[tuple[str, int]]]:
        """(version, filing) delivered per item to any target, oldest first (items with
        none left out)."""
        ...

    def delivery_counts(self) -> list[DeliveryCount]:
        """Rows by delivery status."""
        ...

    def delivery_counts_by_target(self) -> list[DeliveryCount]:
        """Rows by (target, delivery status)."""
        ...


class DeliveryClaimRepository(Protocol):
    """Deliveries under a claim: claim, renew, mark sending, settle, release."""

    def claim_deliveries(
        self,
        *,
        owner: str,
        language: str | None,
        limit: int,
        lease_s: float,
        now: datetime | None = None,
        target: str | None = None,
    ) -> list[DeliveryRecord]:
        """Claim up to `limit` pending (or lease-expired, never sent) deliveries, oldest"""
        ...

    def renew_deliveries(self, lease_tokens: Sequence[str], *, lease_s: float) -> frozenset[str]:
        """Extend these claims' leases on the store's clock; returns the tokens lost."""
        ...

    def mark_sending(
        self, delivery_id: int, *, lease_token: str | None, sent: SentIdentity | None = None
    ) -> None:
        """Our request is about to go out: from now on an unrecorded answer means in doubt."""
        ...

    def record_delivered(
        self,
        delivery_id: int,
        *,
        lease_token: str | None,
        response: dict[str, Any],
        format_name: str | None = None,
        remote_id: str | None = None,
    ) -> None:
        """Mark our delivery done with the response's fields as they came; LeaseLost."""
        ...

    def record_recovered_delivery(
        self, delivery_id: int, *, version: str, response: dict[str, Any], remote_id: str | None
    ) -> bool:
        """Record an accepted upload kept in the journal (its worker is gone, no lease)."""
        ...

    def record_delivery_failed(
        self,
        delivery_id: int,
        *,
        lease_token: str | None,
        error_kind: str,
        message: str,
        retryable: bool,
    ) -> None:
        """Mark our delivery failed (the receiver answered, or nothing was sent); LeaseLost."""
        ...

    def record_delivery_in_doubt(
        self, delivery_id: int, *, lease_token: str | None, error_kind: str, message: str
    ) -> None:
        """Our request went out and no answer came (connection lost, timed out); LeaseLost."""
        ...

    def record_delivery_superseded(self, delivery_id: int, *, lease_token: str | None) -> None:
        """Our delivery's transcript is no longer the item's: never send it; LeaseLost."""
        ...

    def release_deliveries(self, lease_tokens: Sequence[str], *, refused: bool = False) -> None:
        """Give our claims back (attempts - 1): pending, or in_doubt once sending began."""
        ...

    def release_dead_local_deliveries(self) -> int:
        """Take back deliveries held by ended processes of this machine; returns how many."""
        ...
