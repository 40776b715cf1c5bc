"""Whether a note's current version is in the record everywhere it went (no SQL text).

A done recording delivered once and corrected since (or restored to an earlier
version) is not purged by default until its current version is the newest one
delivered to every target it was delivered to: the version is a hash of the
recording's content, language and text (storage/versions.py), so it is compared here,
a page of items at a time.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from storage.models import Delivery, Item
from storage.records import DeliveryStatus, ItemStatus
from storage.versions import transcript_version


def behind_the_record(session: Session, item_ids: Sequence[int]) -> dict[int, str]:
    """Of these items, the done ones some target holds another version of than their
    current one: {item id: language}."""
    items = session.execute(
        select(Item.id, Item.sha256, Item.language, Item.text).where(
            Item.id.in_(item_ids), Item.status == ItemStatus.DONE
        )
    ).all()
    held: dict[int, dict[str, str]] = {}  # item -> target -> newest delivered version
    rows = session.execute(
        select(Delivery.item_id, Delivery.target, Delivery.version)
        .where(Delivery.item_id.in_(item_ids), Delivery.status == DeliveryStatus.DELIVERED)
        .order_by(Delivery.id)
    )
    for item_id, target, version in rows:
        held.setdefault(item_id, {})[target] = version
    behind: dict[int, str] = {}
    for item in items:
        current = transcript_version(
            content_sha256=item.sha256, language=item.language, text=item.text or ""
        )
        if any(version != current for version in held.get(item.id, {}).values()):
            behind[item.id] = item.language
    return behind
