"""In-memory deliveries under a claim for the fake store (tests/fakes/store.py).

They follow storage/delivery_claims.py on the same queue rules as storage/work_queue.py;
tests/storage/test_store_conformance.py runs the same scenarios on both.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from storage.errors import LeaseLost
from storage.owners import is_dead_local_owner
from storage.records import DeliveryRecord, SentIdentity
from tests.fakes.ledgers import delivery_rows, put_delivery

if TYPE_CHECKING:
    from tests.fakes.store import _State

_NO_LEASE: dict[str, Any] = {"lease_owner": None, "lease_expires_at": None, "lease_token": None}
_UNSETTLED = ("pending", "processing", "in_doubt")


def _now() -> datetime:
    return datetime.now(UTC)


class FakeDeliveryClaims:
    """DeliveryClaimRepository in memory, on the same queue rules as storage/work_queue.py."""

    def __init__(self, state: _State) -> None:
        self._s = state

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
        now = now or _now()
        if limit <= 0:
            return []
        for row in self._lapsed(now, owner=owner):
            if row.sending_at is not None:
                put_delivery(self._s, replace(row, status="in_doubt", **_NO_LEASE))
        ordered = sorted(self._s.deliveries.values(), key=lambda r: r.id)
        wanted = [
            r for r in ordered if language in (None, r.language) and target in (None, r.target)
        ]
        lapsed = [r for r in self._lapsed(now, owner=owner) if r in wanted]
        pending = [r for r in wanted if r.status == "pending" and not self._waits(r)]
        taken = []
        for row in (lapsed + pending)[:limit]:
            held = replace(
                row,
                status="processing",
                lease_owner=owner,
                lease_expires_at=now + timedelta(seconds=lease_s),
                lease_token=uuid.uuid4().hex,
                attempts=row.attempts + 1,
                sending_at=None,
            )
            put_delivery(self._s, held)
            taken.append(held)
        return taken

    def renew_deliveries(self, lease_tokens: Sequence[str], *, lease_s: float) -> frozenset[str]:
        renewed = set()
        for row in list(self._s.deliveries.values()):
            if row.status == "processing" and row.lease_token in lease_tokens:
                put_delivery(
                    self._s, replace(row, lease_expires_at=_now() + timedelta(seconds=lease_s))
                )
                renewed.add(row.lease_token)
        return frozenset(lease_tokens) - renewed

    def _waits(self, row: DeliveryRecord) -> bool:
        return any(
            r.id < row.id and r.target == row.target and r.status in _UNSETTLED
            for r in delivery_rows(self._s, row.item_id)
        )

    def mark_sending(
        self, delivery_id: int, *, lease_token: str | None, sent: SentIdentity | None = None
    ) -> None:
        kept = {} if sent is None else vars(sent)
        put_delivery(
            self._s, replace(self._held(delivery_id, lease_token), sending_at=_now(), **kept)
        )

    def record_delivered(
        self,
        delivery_id: int,
        *,
        lease_token: str | None,
        response: dict[str, Any],
        format_name: str | None = None,
        remote_id: str | None = None,
    ) -> None:
        row = self._held(delivery_id, lease_token)
        self._settle(
            row,
            status="delivered",
            format=format_name or row.format,
            response=response,
            remote_id=remote_id,
            delivered_at=_now(),
            error_kind=None,
            error_message=None,
            retryable=False,
            sent_text=None,
        )

    def record_recovered_delivery(
        self, delivery_id: int, *, version: str, response: dict[str, Any], remote_id: str | None
    ) -> bool:
        row = self._s.deliveries.get(delivery_id)
        if row is None or row.version != version or row.status in ("delivered", "superseded"):
            return False
        self._settle(
            row,
            status="delivered",
            response=response,
            remote_id=remote_id,
            delivered_at=_now(),
            error_kind=None,
            error_message=None,
            retryable=False,
        )
        return True

    def record_delivery_failed(
        self,
        delivery_id: int,
        *,
        lease_token: str | None,
        error_kind: str,
        message: str,
        retryable: bool,
    ) -> None:
        row = self._held(delivery_id, lease_token)
        self._settle(
            row,
            status="failed",
            error_kind=error_kind,
            error_message=message,
            retryable=retryable,
            sending_at=None,
            control_id=None,
            sent_text=None,
            series=row.series + 1,
        )

    def record_delivery_in_doubt(
        self, delivery_id: int, *, lease_token: str | None, error_kind: str, message: str
    ) -> None:
        row = self._held(delivery_id, lease_token)
        self._settle(
            row, status="in_doubt", error_kind=error_kind, error_message=message, retryable=False
        )

    def record_delivery_superseded(self, delivery_id: int, *, lease_token: str | None) -> None:
        self._settle(self._held(delivery_id, lease_token), status="superseded")

    def release_deliveries(self, lease_tokens: Sequence[str], *, refused: bool = False) -> None:
        for row in list(self._s.deliveries.values()):
            if row.status == "processing" and row.lease_token in lease_tokens:
                if refused:
                    row = replace(row, sending_at=None, control_id=None, sent_text=None)
                self._take_back(row, attempts=max(row.attempts - 1, 0))

    def release_dead_local_deliveries(self) -> int:
        dead = [
            r
            for r in self._s.deliveries.values()
            if r.status == "processing" and r.lease_owner and is_dead_local_owner(r.lease_owner)
        ]
        for row in dead:
            self._take_back(row, attempts=row.attempts)
        return len(dead)

    def _lapsed(self, now: datetime, *, owner: str) -> list[DeliveryRecord]:
        return [
            r
            for r in sorted(self._s.deliveries.values(), key=lambda r: r.id)
            if r.status == "processing"
            and r.lease_expires_at is not None
            and r.lease_expires_at < now
            and r.lease_owner != owner
        ]

    def _take_back(self, row: DeliveryRecord, *, attempts: int) -> None:
        status = "in_doubt" if row.sending_at is not None else "pending"
        put_delivery(self._s, replace(row, status=status, attempts=attempts, **_NO_LEASE))

    def _held(self, delivery_id: int, lease_token: str | None) -> DeliveryRecord:
        row = self._s.deliveries.get(delivery_id)
        if row is None or lease_token is None or row.status != "processing":
            raise LeaseLost(f"delivery {delivery_id} is no longer held by this worker")
        if row.lease_token != lease_token:
            raise LeaseLost(f"delivery {delivery_id} is no longer held by this worker")
        return row

    def _settle(self, row: DeliveryRecord, **values: Any) -> None:
        put_delivery(self._s, replace(row, **{**_NO_LEASE, **values, "updated_at": _now()}))
