"""The deliveries ledger: one row per (item, transcript version), claimed under a lease.

A transcript version names exactly what a receiver would get: the recording's content
(sha256 of the audio), the language and the text we hold for it. Either changing is a new version,
delivered once; the same transcript uploaded again is not. The format (txt or FHIR) is
not part of it: switching formats must not file the same note twice.

Claiming follows storage/claims.py: PostgreSQL locks claimable rows with
`FOR UPDATE SKIP LOCKED`, SQLite's BEGIN IMMEDIATE admits one claimer at a time; a row
whose lease expired is claimable again, and settling a row we no longer hold raises
LeaseLost.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import ColumnElement, Row, Table, and_, case, func, or_, select, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from storage.errors import LeaseLost
from storage.leases import release_dead_local_holders
from storage.models import Delivery, Item
from storage.queries import Queries, batches, utc_now
from storage.records import DeliveryRecord, ItemRecord

DELIVERIES = cast(Table, Delivery.__table__)
_MESSAGE_MAX_CHARS = 4000
_UNSENT = ("pending", "failed")


def transcript_version(*, content_sha256: str | None, language: str, text: str) -> str:
    """sha256 (hex) naming one transcript of one recording's content in one language."""
    text_sha256 = hashlib.sha256(text.encode("utf-8")).hexdigest()
    named = f"{content_sha256 or ''}\n{language}\n{text_sha256}"
    return hashlib.sha256(named.encode("utf-8")).hexdigest()


def item_version(item: ItemRecord) -> str:
    """The transcript version of a finished item as it is stored now."""
    return transcript_version(
        content_sha256=item.sha256, language=item.language, text=item.text or ""
    )


@dataclass(frozen=True)
class WantedDelivery:
    """A done item and the version of its transcript today."""

    item_id: int
    language: str
    version: str


@dataclass(frozen=True)
class DeliveryCount:
    """Rows of one delivery status."""

    status: str
    rows: int


def _latest_delivered(rows: Sequence[Any]) -> int | None:
    """The id of the last delivered row among `rows` (oldest first), if any."""
    delivered = [r.id for r in rows if r.status == "delivered"]
    return delivered[-1] if delivered else None


def _held_by(owner: str) -> ColumnElement[bool]:
    return and_(Delivery.status == "processing", Delivery.lease_owner == owner)


class DeliveryQueries(Queries):
    """Plan, claim, settle and read deliveries inside one session."""

    def set_item_metadata(
        self, metadata_by_uri: Mapping[str, Mapping[str, str]], *, language: str | None
    ) -> int:
        """Store the manifest's columns on the items (of `language`); returns rows changed."""
        changed = 0
        uris = list(metadata_by_uri)
        for batch in batches(uris, self._uri_batch_size()):
            condition = self._uri_in(batch)
            if language is not None:
                condition = and_(condition, Item.language == language)
            rows = self._session.execute(
                select(Item.id, Item.source_uri, Item.item_metadata).where(condition)
            )
            updates = [
                {"id": row.id, "item_metadata": dict(metadata_by_uri[row.source_uri])}
                for row in rows
                if (row.item_metadata or {}) != dict(metadata_by_uri[row.source_uri])
            ]
            if updates:
                self._session.execute(update(Item), updates)
            changed += len(updates)
        return changed

    def done_items_page(
        self, *, language: str | None, after_id: int, limit: int, status: str = "done"
    ) -> list[ItemRecord]:
        """Up to `limit` items with `status` (of `language`) whose id is above `after_id`."""
        condition = and_(Item.status == status, Item.id > after_id)
        if language is not None:
            condition = and_(condition, Item.language == language)
        return self._items_where(condition, limit=limit)

    def plan_deliveries(self, wanted: Sequence[WantedDelivery], *, format_name: str) -> int:
        """Add a pending row for each version not seen yet; returns how many were added.

        A new row names the latest delivered version of its item (`replaces_id`); older
        versions never delivered become `superseded`. Rows already there are left as
        they are, so a delivered version is never queued again.
        """
        added = 0
        for batch in batches(list(wanted)):
            known = self._rows_of_items([w.item_id for w in batch])
            inserts = []
            for want in batch:
                rows = known.get(want.item_id, [])
                same = [r for r in rows if r.version == want.version]
                others = [r for r in rows if r.version != want.version]
                if same and same[0].status != "superseded":
                    continue
                self._supersede([r.id for r in others if r.status in _UNSENT])
                if same:  # back to a version set aside before it was sent
                    added += self._revive(same[0].id, replaces_id=_latest_delivered(others))
                else:
                    inserts.append(self._new_row(want, others, format_name=format_name))
            if inserts:
                added += self._insert_new_rows(inserts)
        return added

    def _rows_of_items(self, item_ids: Sequence[int]) -> dict[int, list[Any]]:
        rows = self._session.execute(
            select(
                Delivery.id,
                Delivery.item_id,
                Delivery.version,
                Delivery.status,
                Delivery.delivered_at,
            )
            .where(Delivery.item_id.in_(item_ids))
            .order_by(Delivery.id)
        )
        found: dict[int, list[Any]] = {}
        for row in rows:
            found.setdefault(row.item_id, []).append(row)
        return found

    def _supersede(self, ids: Sequence[int]) -> None:
        if ids:
            self._session.execute(
                update(Delivery)
                .where(Delivery.id.in_(ids), Delivery.status.in_(_UNSENT))
                .values(status="superseded", updated_at=utc_now())
                .execution_options(synchronize_session=False)
            )

    def _revive(self, delivery_id: int, *, replaces_id: int | None) -> int:
        result = self._session.execute(
            update(Delivery)
            .where(Delivery.id == delivery_id, Delivery.status == "superseded")
            .values(status="pending", attempts=0, replaces_id=replaces_id, updated_at=utc_now())
            .execution_options(synchronize_session=False)
        )
        return int(result.rowcount)  # type: ignore[attr-defined]

    @staticmethod
    def _new_row(
        want: WantedDelivery, rows: Sequence[Row[Any]], *, format_name: str
    ) -> dict[str, Any]:
        now = utc_now()
        return {
            "item_id": want.item_id,
            "language": want.language,
            "version": want.version,
            "format": format_name,
            "status": "pending",
            "attempts": 0,
            "retryable": False,
            "replaces_id": _latest_delivered(rows),
            "created_at": now,
            "updated_at": now,
        }

    def _insert_new_rows(self, rows: list[dict[str, Any]]) -> int:
        """Insert rows another deliverer may be planning at this moment; returns ours."""
        dialect = self._session.get_bind().dialect.name
        statement = (postgresql_insert if dialect == "postgresql" else sqlite_insert)(DELIVERIES)
        inserted = self._session.execute(
            statement.on_conflict_do_nothing(index_elements=["item_id", "version"]).returning(
                DELIVERIES.c.id
            ),
            rows,
        )
        return len(inserted.all())

    def requeue_delivery_failures(self, *, max_attempts: int) -> int:
        """Send retryable failed deliveries under `max_attempts` back to pending; how many."""
        result = self._session.execute(
            update(Delivery)
            .where(
                Delivery.status == "failed",
                Delivery.retryable.is_(True),
                Delivery.attempts < max_attempts,
            )
            .values(status="pending", updated_at=utc_now())
            .execution_options(synchronize_session=False)
        )
        return int(result.rowcount)  # type: ignore[attr-defined]

    def claim_deliveries(
        self,
        *,
        owner: str,
        language: str | None,
        limit: int,
        lease_s: float,
        now: datetime | None = None,
    ) -> list[DeliveryRecord]:
        """Claim up to `limit` pending (or lease-expired) deliveries, oldest first."""
        now = now or utc_now()
        if limit <= 0:
            return []
        expired = and_(Delivery.status == "processing", Delivery.lease_expires_at < now)
        claimable: ColumnElement[bool] = or_(Delivery.status == "pending", expired)
        if language is not None:
            claimable = and_(claimable, Delivery.language == language)
        query = select(Delivery.id).where(claimable).order_by(Delivery.id).limit(limit)
        # SKIP LOCKED: rows another deliverer is taking are left to it (PostgreSQL only).
        ids = list(self._session.scalars(query.with_for_update(skip_locked=True)))
        if not ids:
            return []
        self._session.execute(
            update(Delivery)
            .where(Delivery.id.in_(ids))
            .values(
                status="processing",
                lease_owner=owner,
                lease_expires_at=now + timedelta(seconds=lease_s),
                attempts=Delivery.attempts + 1,
                updated_at=now,
            )
            .execution_options(synchronize_session=False)
        )
        return self._deliveries_where(Delivery.id.in_(ids))

    def record_delivered(
        self,
        delivery_id: int,
        *,
        owner: str,
        response: dict[str, Any],
        format_name: str | None = None,
    ) -> None:
        """Mark our delivery done with the response's fields as they came; LeaseLost.

        `format_name` is what was sent (a row planned as txt may go out as fhir).
        """
        now = utc_now()
        formats = {} if format_name is None else {"format": format_name}
        self._settle_delivery(
            delivery_id,
            owner=owner,
            status="delivered",
            **formats,
            response=response,
            delivered_at=now,
            error_kind=None,
            error_message=None,
            retryable=False,
        )

    def record_delivery_failed(
        self, delivery_id: int, *, owner: str, error_kind: str, message: str, retryable: bool
    ) -> None:
        """Mark our delivery failed with its error; raises LeaseLost."""
        self._settle_delivery(
            delivery_id,
            owner=owner,
            status="failed",
            error_kind=error_kind,
            error_message=message[:_MESSAGE_MAX_CHARS],
            retryable=retryable,
        )

    def record_delivery_superseded(self, delivery_id: int, *, owner: str) -> None:
        """Our delivery's transcript is no longer the item's: never send it; LeaseLost."""
        self._settle_delivery(delivery_id, owner=owner, status="superseded")

    def _settle_delivery(self, delivery_id: int, *, owner: str, **values: Any) -> None:
        result = self._session.execute(
            update(Delivery)
            .where(Delivery.id == delivery_id, _held_by(owner))
            .values(updated_at=utc_now(), lease_owner=None, lease_expires_at=None, **values)
            .execution_options(synchronize_session=False)
        )
        if result.rowcount != 1:  # type: ignore[attr-defined]
            raise LeaseLost(f"delivery {delivery_id} is no longer held by this worker")

    def release_deliveries(self, delivery_ids: Sequence[int], *, owner: str) -> None:
        """Give our deliveries back (pending, attempts - 1): the stop was not theirs."""
        for batch in batches(list(delivery_ids)):
            self._session.execute(
                update(Delivery)
                .where(Delivery.id.in_(batch), _held_by(owner))
                .values(
                    status="pending",
                    attempts=case((Delivery.attempts > 0, Delivery.attempts - 1), else_=0),
                    lease_owner=None,
                    lease_expires_at=None,
                    updated_at=utc_now(),
                )
                .execution_options(synchronize_session=False)
            )

    def release_dead_local_deliveries(self) -> int:
        """Give back deliveries held by ended processes of this machine; returns how many.

        Their upload may have reached the service before the process died: the row goes
        back to pending all the same (the FHIR identifiers let a receiver deduplicate).
        """
        return release_dead_local_holders(
            self._session, Delivery, cleared={"lease_owner": None, "lease_expires_at": None}
        )

    def get_delivery(self, delivery_id: int) -> DeliveryRecord | None:
        """One delivery row by id."""
        found = self._deliveries_where(Delivery.id == delivery_id)
        return found[0] if found else None

    def deliveries_of_item(self, item_id: int) -> list[DeliveryRecord]:
        """Every delivery row of one item, oldest first."""
        return self._deliveries_where(Delivery.item_id == item_id)

    def delivered_versions(self, item_ids: Sequence[int]) -> dict[int, list[str]]:
        """Versions delivered per item, oldest first (items with none left out)."""
        found: dict[int, list[str]] = {}
        for batch in batches(list(item_ids)):
            rows = self._session.execute(
                select(Delivery.item_id, Delivery.version)
                .where(Delivery.item_id.in_(batch), Delivery.status == "delivered")
                .order_by(Delivery.delivered_at, Delivery.id)
            )
            for item_id, version in rows:
                found.setdefault(item_id, []).append(version)
        return found

    def delivery_counts(self) -> list[DeliveryCount]:
        """Rows by delivery status."""
        rows = self._session.execute(
            select(Delivery.status, func.count())
            .group_by(Delivery.status)
            .order_by(Delivery.status)
        )
        return [DeliveryCount(status, int(n)) for status, n in rows]

    def _deliveries_where(self, condition: ColumnElement[bool]) -> list[DeliveryRecord]:
        query = select(DELIVERIES).where(condition).order_by(Delivery.id)
        return [DeliveryRecord(**row._asdict()) for row in self._session.execute(query)]
