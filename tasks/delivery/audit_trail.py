"""A delivery's outcome in the audit trail: delivered, failed for good, or in doubt.

Written in the transaction that records the outcome, so the trail and the deliveries
table never disagree. The event names the recording, the target and the receiver's id
for the document; the note itself never enters the trail.
"""

from __future__ import annotations

from collections.abc import Sequence

from audit import AuditAction, record_event
from storage.interface import UnitOfWork
from storage.records import DeliveryRecord
from tasks.discovery.names import recording_name


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
    item = uow.items.get_item(row.item_id)
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
