"""Retention in the store: find the recordings a purge may take, and remove their text.

A purged item keeps its row: key (source URI, language, source version), size, the
recording's SHA-256, duration and chunk count, status `purged`, and under
extras["purged"] when and by whom, its status before, and the HMAC-SHA256 of every text
removed (transcript, each chunk, the manifest's metadata, the extras, the error
message, each delivery's response) under a key the store does not hold (an unkeyed
hash of a six-digit patient id is undone by trying every id). So a run over the
unchanged source finds it settled and sends nothing, and `deliver` (which plans done
items only) files nothing. Its chunks are deleted; its deliveries lose their response
bodies and messages, and those never sent become superseded. A recording with a
delivery another process holds or that may be in the record (in doubt) is never
taken, `--include-undelivered` or not; by default neither is a done one whose current
version is not the newest delivered to every target it went to (a correction not
filed yet). The SQLite connection deletes with `secure_delete` on (freed pages are
zeroed); `reclaim_space` then VACUUMs.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, and_, case, delete, exists, func, not_, or_, select, update
from sqlalchemy.orm import Session

from storage import clock
from storage.models import ChunkRow, Delivery, Item, Revision
from storage.records import DeliveryStatus, ItemStatus
from storage.retention_current import behind_the_record
from storage.retention_records import KeptCount, PurgedItem, PurgeSelection

_FINISHED = (ItemStatus.DONE, ItemStatus.NEEDS_REVIEW, ItemStatus.FAILED, ItemStatus.SKIPPED)
_UNSETTLED = (
    DeliveryStatus.PENDING,
    DeliveryStatus.PROCESSING,
    DeliveryStatus.FAILED,
    DeliveryStatus.IN_DOUBT,
)
_FINISHED_AT = func.coalesce(Item.done_at, Item.updated_at)
# Held by a deliverer, or went out unanswered: the receiver may have it. Never touched.
_MAY_BE_FILED = (DeliveryStatus.PROCESSING, DeliveryStatus.IN_DOUBT)
_NEVER_SENT = (DeliveryStatus.PENDING, DeliveryStatus.FAILED)
_PAGE = 2_000


class Retention:
    """Purge candidates and the purge itself, inside one session (`uow.retention`)."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def purgeable_ids(self, selection: PurgeSelection, *, after_id: int, limit: int) -> list[int]:
        """Up to `limit` ids of items the selection takes, above `after_id`, in id order.

        By default a done note some target holds another version of (a correction not
        filed yet) is left out (storage/retention_current.py)."""
        while True:
            ids = self._candidates(selection, after_id=after_id, limit=limit)
            if not ids or selection.include_undelivered:
                return ids
            behind = behind_the_record(self._session, ids)
            chosen = [i for i in ids if i not in behind]
            if chosen:
                return chosen
            after_id = ids[-1]

    def _candidates(self, selection: PurgeSelection, *, after_id: int, limit: int) -> list[int]:
        query = (
            select(Item.id)
            .where(_old_enough(selection), _taken(selection), Item.id > after_id)
            .order_by(Item.id)
            .limit(limit)
        )
        return list(self._session.scalars(query))

    def kept_counts(self, selection: PurgeSelection) -> list[KeptCount]:
        """Items old enough that the selection keeps, by reason and language."""
        reason = _kept_reason()
        kept = not_(_taken(selection))
        query = (
            select(reason, Item.language, func.count())
            .where(_old_enough(selection), kept)
            .group_by(reason, Item.language)
        )
        counts = Counter({(r, language): n for r, language, n in self._session.execute(query)})
        after_id = 0
        while not selection.include_undelivered:
            ids = self._candidates(selection, after_id=after_id, limit=_PAGE)
            if not ids:
                break
            for language in behind_the_record(self._session, ids).values():
                counts[("undelivered", language)] += 1
            after_id = ids[-1]
        return [KeptCount(r, language, n) for (r, language), n in sorted(counts.items())]

    def purge_items(
        self, item_ids: Sequence[int], *, purged_by: str, receipt_key: bytes
    ) -> list[PurgedItem]:
        """Remove the patient data of these items (those not purged already); returns what
        was purged, in id order. Each removed text is kept as its HMAC-SHA256 under
        `receipt_key`, a key the store does not hold: a value cannot be found again by
        hashing candidates (a six-digit patient id) without it."""
        if self._session.get_bind().dialect.name == "sqlite":
            self._session.connection().exec_driver_sql("PRAGMA secure_delete = ON")
        rows = self._session.execute(
            select(Item.__table__)
            .where(Item.id.in_(item_ids), Item.status != ItemStatus.PURGED, not_(_in_flight()))
            .order_by(Item.id)
        ).all()
        if not rows:
            return []
        ids, now = [row.id for row in rows], clock.host_now()
        purged, changes = self._receipts(rows, keyed=_Keyed(receipt_key), by=purged_by, now=now)
        self._session.execute(delete(ChunkRow).where(ChunkRow.item_id.in_(ids)))
        # Reviewers' drafts and versions are transcript text too.
        self._session.execute(delete(Revision).where(Revision.item_id.in_(ids)))
        self._clear_deliveries(ids, now=now)
        self._clear_items(ids, now=now)
        self._session.execute(update(Item), changes)  # each row's own receipt (bulk, by id)
        return purged

    def _receipts(
        self, rows: Sequence[Any], *, keyed: _Keyed, by: str, now: datetime
    ) -> tuple[list[PurgedItem], list[dict[str, Any]]]:
        """The purged items, and each row's receipt (what it held, keyed) as its extras."""
        ids = [row.id for row in rows]
        chunks = _hashes_by_item(
            keyed,
            self._session.execute(
                select(ChunkRow.item_id, ChunkRow.index, ChunkRow.text).where(
                    ChunkRow.item_id.in_(ids)
                )
            ).all(),
        )
        responses = _hashes_by_item(
            keyed,
            self._session.execute(
                select(
                    Delivery.item_id, Delivery.id, Delivery.response, Delivery.error_message
                ).where(Delivery.item_id.in_(ids))
            ).all(),
        )
        purged, changes = [], []
        for row in rows:
            hashes = _item_hashes(
                keyed, row, chunks=chunks.get(row.id, {}), responses=responses.get(row.id, {})
            )
            digest = _sha(json.dumps(hashes, sort_keys=True))
            finished_at = row.done_at or row.updated_at
            purged.append(PurgedItem(row.id, row.language, row.status, finished_at, digest))
            receipt = {
                "at": now.isoformat(),
                "by": by,
                "status": row.status,
                "finished_at": finished_at.isoformat(),
                "hmac_sha256": hashes,
                "key_id": keyed.key_id,
                "digest": digest,
            }
            changes.append({"id": row.id, "extras": {"purged": receipt}})
        return purged, changes

    def _clear_deliveries(self, ids: Sequence[int], *, now: datetime) -> None:
        """The deliveries lose their bodies and messages; those never sent are superseded."""
        self._session.execute(
            update(Delivery)
            .where(Delivery.item_id.in_(ids), Delivery.status.not_in(_MAY_BE_FILED))
            .values(
                response=None,
                error_message=None,
                sent_text=None,  # the words a delivery went out with: transcript text too
                lease_owner=None,
                lease_expires_at=None,
                lease_token=None,
                updated_at=now,
            )
            .execution_options(synchronize_session=False)
        )
        self._session.execute(
            update(Delivery)
            .where(
                Delivery.item_id.in_(ids),
                Delivery.status.in_(_NEVER_SENT),
                Delivery.control_id.is_(None),
            )
            .values(status=DeliveryStatus.SUPERSEDED)
            .execution_options(synchronize_session=False)
        )

    def _clear_items(self, ids: Sequence[int], *, now: datetime) -> None:
        """The items keep their key, size and hash, and become purged."""
        self._session.execute(
            update(Item)
            .where(Item.id.in_(ids))
            .values(
                status=ItemStatus.PURGED,
                text=None,
                machine_text=None,
                item_metadata=None,
                error_kind=None,
                error_message=None,
                flags=None,
                retryable=False,
                next_attempt_at=None,
                lease_owner=None,
                lease_expires_at=None,
                lease_token=None,
                updated_at=now,
            )
            .execution_options(synchronize_session=False)
        )

    def delivery_ids_of(self, item_ids: Sequence[int]) -> list[int]:
        """The ids of these items' deliveries (to drop their journal entries)."""
        return list(
            self._session.scalars(select(Delivery.id).where(Delivery.item_id.in_(item_ids)))
        )


def _old_enough(selection: PurgeSelection) -> ColumnElement[bool]:
    condition = and_(Item.status.in_(_FINISHED), selection.finished_before > _FINISHED_AT)
    if selection.language is not None:
        condition = and_(condition, Item.language == selection.language)
    return condition


def _in_flight() -> ColumnElement[bool]:
    """A delivery of the item is held by a deliverer or may be in the record (in doubt,
    or sent and queued again by a person)."""
    return exists().where(
        Delivery.item_id == Item.id,
        or_(
            Delivery.status.in_(_MAY_BE_FILED),
            and_(Delivery.status == DeliveryStatus.PENDING, Delivery.control_id.is_not(None)),
        ),
    )


def _taken(selection: PurgeSelection) -> ColumnElement[bool]:
    if selection.include_undelivered:
        return not_(_in_flight())
    unsettled = exists().where(Delivery.item_id == Item.id, Delivery.status.in_(_UNSETTLED))
    done = and_(Item.status == ItemStatus.DONE, not_(unsettled))
    if selection.delivery_configured:  # a done recording not yet planned is undelivered
        done = and_(done, exists().where(Delivery.item_id == Item.id))
    return or_(Item.status == ItemStatus.SKIPPED, done)


def _kept_reason() -> ColumnElement[str]:
    in_doubt = exists().where(
        Delivery.item_id == Item.id, Delivery.status == DeliveryStatus.IN_DOUBT
    )
    return case(
        (_in_flight() & not_(in_doubt), "sending"),
        (in_doubt, "in_doubt"),
        (Item.status == ItemStatus.NEEDS_REVIEW, "held"),
        (Item.status == ItemStatus.FAILED, "failed"),
        else_="undelivered",
    )


class _Keyed:
    """HMAC-SHA256 of texts under the receipt key; `key_id` names the key, not its value."""

    def __init__(self, key: bytes) -> None:
        self._key = key
        self.key_id = _sha("receipt key\n" + key.hex())[:16]

    def __call__(self, text: str) -> str:
        return hmac.new(self._key, text.encode("utf-8"), hashlib.sha256).hexdigest()


def _hashes_by_item(keyed: _Keyed, rows: Sequence[Any]) -> dict[int, dict[str, str]]:
    """{item id: {label: keyed hash}} for rows (item_id, key, text...) with any text."""
    found: dict[int, dict[str, str]] = {}
    for item_id, key, *texts in rows:
        for number, text in enumerate(texts):
            if text is not None:
                label = f"{key}" if number == 0 else f"{key}.{number}"
                found.setdefault(item_id, {})[label] = keyed(_as_text(text))
    return found


def _item_hashes(
    keyed: _Keyed, row: Any, *, chunks: dict[str, str], responses: dict[str, str]
) -> dict[str, Any]:
    hashes: dict[str, Any] = {
        name: keyed(_as_text(value))
        for name, value in (
            ("text", row.text),
            ("machine_text", row.machine_text),
            ("metadata", row.metadata),
            ("extras", row.extras),
            ("error_message", row.error_message),
        )
        if value is not None
    }
    if chunks:
        hashes["chunks"] = chunks
    if responses:
        hashes["deliveries"] = responses
    return hashes


def _as_text(value: Any) -> str:
    return (
        value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)
    )


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
