"""The holder of a delivery's claim (`uow.delivery_claims`): claim, send, settle, release.

Rows are claimed on the one work queue (storage/work_queue.py): a token per claim,
renewal, the store's clock, the dead taken back. `mark_sending` commits `sending_at`
just before a request goes out; from then on a row whose answer was not recorded
(holder killed, lease lapsed, stopped mid-request) becomes `in_doubt`, never pending:
the receiver may have filed it. Only `resend_in_doubt` (storage/deliveries.py, a
person's decision) sends it back to pending. The rows are planned and read in
storage/deliveries.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, exists, select, update
from sqlalchemy.orm import Session, aliased

from storage import clock
from storage.deliveries import deliveries_where
from storage.models import Delivery
from storage.queries import batches
from storage.records import DeliveryRecord, SentIdentity
from storage.work_queue import WorkQueue, cleared_lease, ended_with_error

# A row that may still be filed, or is about to go: a newer version of its note waits.
_UNSETTLED = ("pending", "processing", "in_doubt")

__all__ = ["DeliveryClaims"]


class DeliveryClaims:
    """Claim, mark sending, settle and release deliveries inside one session."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self._queue = WorkQueue(session, Delivery, doubt_when=Delivery.sending_at.is_not(None))

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
        """Claim up to `limit` pending (or lease-expired, never sent) deliveries, oldest
        first, each with its own lease token. Lapsed rows whose request went out become
        in_doubt first. `now` stands in for the store's clock (tests)."""
        now = now or self._queue.now()
        if limit <= 0:
            return []
        self._queue.doubt_lapsed(owner=owner, now=now)
        ids: list[int] = []
        for claimable in self._queue.claimable(now, owner=owner):
            if language is not None:
                claimable = claimable & (Delivery.language == language)
            if target is not None:  # a run sends to one target: the others' rows wait
                claimable = claimable & (Delivery.target == target)
            claimable = claimable & ~_older_version_unsettled()
            query = select(Delivery.id).where(claimable).order_by(Delivery.id)
            ids += self._queue.lock_ids(query.limit(limit - len(ids)))
            if len(ids) >= limit:
                break
        if not ids:
            return []
        self._queue.take(ids, owner=owner, lease_s=lease_s, now=now)
        self._session.execute(
            update(Delivery)
            .where(Delivery.id.in_(ids))
            .values(sending_at=None)
            .execution_options(synchronize_session=False)
        )
        return deliveries_where(self._session, Delivery.id.in_(ids))

    def renew_deliveries(self, lease_tokens: Sequence[str], *, lease_s: float) -> frozenset[str]:
        """Extend these claims' leases on the store's clock; returns the tokens lost."""
        return self._queue.renew(lease_tokens, lease_s=lease_s)

    def mark_sending(
        self,
        delivery_id: int,
        *,
        lease_token: str | None,
        sent: SentIdentity | None = None,
    ) -> None:
        """Our request is about to go out: from now on an unrecorded answer means in doubt.

        `sent`: the identifiers and words it goes out with, kept until an answer settles
        it. Commit it before sending. Raises LeaseLost if the claim is no longer ours.
        """
        kept = {} if sent is None else vars(sent)
        self._queue.touch(delivery_id, lease_token=lease_token, sending_at=clock.host_now(), **kept)

    def record_delivered(
        self,
        delivery_id: int,
        *,
        lease_token: str | None,
        response: dict[str, Any],
        format_name: str | None = None,
        remote_id: str | None = None,
    ) -> None:
        """Mark our delivery done with the response's fields as they came; LeaseLost.

        `format_name` is what was sent (a row planned as txt may go out as fhir);
        `remote_id` what the receiver named the document, if it said.
        """
        formats = {} if format_name is None else {"format": format_name}
        self._queue.settle(
            delivery_id,
            lease_token=lease_token,
            **formats,
            **_delivered(response=response, remote_id=remote_id),
        )

    def record_recovered_delivery(
        self, delivery_id: int, *, version: str, response: dict[str, Any], remote_id: str | None
    ) -> bool:
        """Record an accepted upload kept in the journal (its worker is gone, no lease).

        Only while the row is that version and not delivered; False (nothing written)
        otherwise.
        """
        result = self._session.execute(
            update(Delivery)
            .where(
                Delivery.id == delivery_id,
                Delivery.version == version,
                Delivery.status.in_(("pending", "processing", "failed", "in_doubt")),
            )
            .values(
                **_delivered(response=response, remote_id=remote_id),
                **cleared_lease(),
                updated_at=clock.host_now(),
            )
            .execution_options(synchronize_session=False)
        )
        return bool(result.rowcount)  # type: ignore[attr-defined]

    def record_delivery_failed(
        self,
        delivery_id: int,
        *,
        lease_token: str | None,
        error_kind: str,
        message: str,
        retryable: bool,
    ) -> None:
        """Mark our delivery failed (the receiver answered, or nothing was sent); LeaseLost.

        The answer was definitive: a later try is a new attempt series (a new MSH-10).
        """
        self._queue.settle(
            delivery_id,
            lease_token=lease_token,
            **ended_with_error(
                "failed", error_kind=error_kind, message=message, retryable=retryable
            ),
            sending_at=None,
            control_id=None,
            sent_text=None,
        )
        self._session.execute(
            update(Delivery)
            .where(Delivery.id == delivery_id)
            .values(series=Delivery.series + 1)
            .execution_options(synchronize_session=False)
        )

    def record_delivery_in_doubt(
        self, delivery_id: int, *, lease_token: str | None, error_kind: str, message: str
    ) -> None:
        """Our request went out and no answer came (connection lost, timed out); LeaseLost."""
        self._queue.settle(
            delivery_id,
            lease_token=lease_token,
            **ended_with_error("in_doubt", error_kind=error_kind, message=message, retryable=False),
        )

    def record_delivery_superseded(self, delivery_id: int, *, lease_token: str | None) -> None:
        """Our delivery's transcript is no longer the item's: never send it; LeaseLost."""
        self._queue.settle(delivery_id, lease_token=lease_token, status="superseded")

    def release_deliveries(self, lease_tokens: Sequence[str], *, refused: bool = False) -> None:
        """Give our claims back (attempts - 1): pending, or in_doubt once sending began.

        `refused`: the receiver refused them (401/403) or nothing went out: pending, with
        nothing of theirs outstanding.
        """
        if refused:
            for batch in batches(list(lease_tokens)):
                self._session.execute(
                    update(Delivery)
                    .where(Delivery.status == "processing", Delivery.lease_token.in_(batch))
                    .values(sending_at=None, control_id=None, sent_text=None)
                    .execution_options(synchronize_session=False)
                )
        self._queue.release(lease_tokens)

    def release_dead_local_deliveries(self) -> int:
        """Take back deliveries held by ended processes of this machine; returns how many.

        A row whose request had gone out becomes in_doubt (the receiver may have filed
        it); one never sent goes back to pending.
        """
        return self._queue.take_back_dead()


def _older_version_unsettled() -> ColumnElement[bool]:
    """An older row of the same item and target is still unsettled (may be filed)."""
    older = aliased(Delivery)
    return exists().where(
        older.item_id == Delivery.item_id,
        older.target == Delivery.target,
        older.id < Delivery.id,
        older.status.in_(_UNSETTLED),
    )


def _delivered(*, response: dict[str, Any], remote_id: str | None) -> dict[str, Any]:
    """The columns of a delivered row, whoever settles it (its worker or a replayed journal)."""
    return {
        "status": "delivered",
        "response": response,
        "remote_id": remote_id,
        "delivered_at": clock.host_now(),
        "error_kind": None,
        "error_message": None,
        "retryable": False,
        "sent_text": None,
    }
