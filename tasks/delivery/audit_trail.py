"""A delivery's outcome in the audit trail: delivered, failed for good, or in doubt.

Written in the transaction that records the outcome, so the trail and the deliveries
table never disagree. The event names the recording, the target and the receiver's id
for the document; the note itself never enters the trail.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from audit import AuditAction, record_event
from storage.interface import UnitOfWork
from storage.records import DeliveryRecord
from tasks.discovery.recording_names import recording_name
from tasks.work.journal import AcceptedDelivery, record_accepted


def record_delivery_event(
    uow: UnitOfWork,
    row: DeliveryRecord,
    *,
    action: AuditAction,
    actor: str,
    target: str,
    format_name: str,
    roots: Sequence[str],
    receiver_id: str | None = None,
) -> None:
    """One audit event for `row`'s outcome, in `uow` (the transaction that records it)."""
    item = uow.item_queries.get_item(row.item_id)
    detail: dict[str, str | int] = {
        "delivery_id": row.id,
        "format": format_name,
        "version": row.version,
    }
    if receiver_id:
        detail["receiver_id"] = receiver_id[:255]
    record_event(
        uow,
        action=action,
        actor=actor,
        item_id=row.item_id,
        path=recording_name(item.source_uri, roots=roots) if item else None,
        target=target,
        detail=detail,
    )


def journal_recorder(*, actor: str) -> Callable[[UnitOfWork, AcceptedDelivery], bool]:
    """Records an upload kept in the journal (the store was down when it was accepted)
    and its `delivered` event, in one transaction; False when the row moved on."""

    def record(uow: UnitOfWork, accepted: AcceptedDelivery) -> bool:
        if not record_accepted(uow, accepted):
            return False
        row = uow.deliveries.get_delivery(accepted.delivery_id)
        if row is not None:
            record_delivery_event(
                uow, row, action=AuditAction.DELIVERED, actor=actor, target=row.target,
                format_name=row.format, roots=uow.runs.run_sources(),
                receiver_id=accepted.remote_id,
            )  # fmt: skip
        return True

    return record


def record_resent(uow: UnitOfWork, rows: Sequence[DeliveryRecord], *, actor: str) -> None:
    """A `resent` event per in-doubt delivery sent out again, in the transaction that
    puts it back in the queue."""
    roots = uow.runs.run_sources() if rows else []
    for row in rows:
        record_delivery_event(
            uow, row, action=AuditAction.RESENT, actor=actor, target=row.target,
            format_name=row.format, roots=roots,
        )  # fmt: skip
