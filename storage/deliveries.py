"""The deliveries repository (`uow.deliveries`): one row per (item, version, target).

A transcript version names exactly what a receiver would get: the recording's content
(sha256 of the audio), the language and the text we hold for it. Either changing is a
new version, delivered once per target; the same transcript uploaded again is not. The
format (txt or FHIR) is not part of it: switching formats must not file the same note
twice.

This module plans the rows, sends in-doubt ones back by a person's decision and reads
them; what the holder of a claim does (claim, mark sending, settle, release) is
storage/delivery_claims.py (`uow.delivery_claims`) on the one work queue.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from sqlalchemy import ColumnElement, Table, func, select, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from storage import clock
from storage.errors import SchemaOutdated
from storage.models import Delivery, StoreIdentity
from storage.queries import batches
from storage.records import DeliveryCount, DeliveryRecord, WantedDelivery
from storage.versions import item_version, plan_version, transcript_version

DELIVERIES = cast(Table, Delivery.__table__)
_UNSENT = ("pending", "failed")

__all__ = [
    "Deliveries",
    "DeliveryCount",
    "WantedDelivery",
    "deliveries_where",
    "item_version",
    "transcript_version",
]


class Deliveries:
    """Plan, send back and read deliveries inside one session."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def plan_deliveries(self, wanted: Sequence[WantedDelivery], *, format_name: str) -> int:
        """Add a pending row for each current version a target does not hold; returns how
        many were added (or revived).

        A new row names the latest delivered version of its item (`replaces_id`); older
        versions never sent become `superseded`. A version delivered once is queued again
        (a new `filing`) only when the target holds another version that replaced it:
        storage/versions.py `plan_version` decides.
        """
        added = 0
        for batch in batches(list(wanted)):
            known = self._rows_of_items([w.item_id for w in batch])
            inserts = []
            for want in batch:
                rows = [r for r in known.get(want.item_id, []) if r.target == want.target]
                others = [r for r in rows if r.version != want.version]
                self._supersede([r.id for r in others if _never_sent(r)])
                plan = plan_version(rows, version=want.version)
                if plan.action == "revive" and plan.row_id is not None:
                    added += self._revive(plan.row_id, replaces_id=plan.replaces_id)
                elif plan.action in ("new", "refile"):
                    inserts.append(
                        self._new_row(
                            want,
                            replaces_id=plan.replaces_id,
                            filing=plan.filing,
                            format_name=format_name,
                        )
                    )
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
                Delivery.target,
                Delivery.control_id,
                Delivery.filing,
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
                .where(
                    Delivery.id.in_(ids),
                    Delivery.status.in_(_UNSENT),
                    Delivery.control_id.is_(None),
                )
                .values(status="superseded", updated_at=clock.host_now())
                .execution_options(synchronize_session=False)
            )

    def _revive(self, delivery_id: int, *, replaces_id: int | None) -> int:
        result = self._session.execute(
            update(Delivery)
            .where(Delivery.id == delivery_id, Delivery.status == "superseded")
            .values(
                status="pending",
                attempts=0,
                replaces_id=replaces_id,
                sending_at=None,
                updated_at=clock.host_now(),
            )
            .execution_options(synchronize_session=False)
        )
        return int(result.rowcount)  # type: ignore[attr-defined]

    @staticmethod
    def _new_row(
        want: WantedDelivery, *, replaces_id: int | None, filing: int, format_name: str
    ) -> dict[str, Any]:
        now = clock.host_now()
        return {
            "item_id": want.item_id,
            "language": want.language,
            "version": want.version,
            "format": format_name,
            "target": want.target,
            "status": "pending",
            "attempts": 0,
            "retryable": False,
            "replaces_id": replaces_id,
            "filing": filing,
            "created_at": now,
            "updated_at": now,
        }

    def _insert_new_rows(self, rows: list[dict[str, Any]]) -> int:
        """Insert rows another deliverer may be planning at this moment; returns ours."""
        dialect = self._session.get_bind().dialect.name
        statement = (postgresql_insert if dialect == "postgresql" else sqlite_insert)(DELIVERIES)
        inserted = self._session.execute(
            statement.on_conflict_do_nothing(
                index_elements=["item_id", "version", "target", "filing"]
            ).returning(DELIVERIES.c.id),
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
            .values(status="pending", sending_at=None, updated_at=clock.host_now())
            .execution_options(synchronize_session=False)
        )
        return int(result.rowcount)  # type: ignore[attr-defined]

    def resend_in_doubt(self, *, language: str | None = None, target: str | None = None) -> int:
        """A person's decision (or a deduplicating target's): in-doubt deliveries (of
        `language`, to `target`) go out again; how many."""
        chosen: ColumnElement[bool] = Delivery.status == "in_doubt"
        if language is not None:
            chosen = chosen & (Delivery.language == language)
        if target is not None:
            chosen = chosen & (Delivery.target == target)
        result = self._session.execute(
            update(Delivery)
            .where(chosen)
            .values(status="pending", sending_at=None, updated_at=clock.host_now())
            .execution_options(synchronize_session=False)
        )
        return int(result.rowcount)  # type: ignore[attr-defined]

    def in_doubt_deliveries(
        self, *, language: str | None = None, target: str | None = None
    ) -> list[DeliveryRecord]:
        """The in-doubt deliveries (of `language`, to `target`) `resend_in_doubt` takes."""
        chosen: ColumnElement[bool] = Delivery.status == "in_doubt"
        if language is not None:
            chosen = chosen & (Delivery.language == language)
        if target is not None:
            chosen = chosen & (Delivery.target == target)
        return deliveries_where(self._session, chosen)

    def store_identity(self) -> str:
        """This store's own name (made once per database by a migration)."""
        found = self._session.scalar(select(StoreIdentity.store_id).where(StoreIdentity.id == 1))
        if not found:
            raise SchemaOutdated("the database has no store identity; run `medasr db upgrade`")
        return found

    def get_delivery(self, delivery_id: int) -> DeliveryRecord | None:
        """One delivery row by id."""
        found = deliveries_where(self._session, Delivery.id == delivery_id)
        return found[0] if found else None

    def deliveries_of_item(self, item_id: int) -> list[DeliveryRecord]:
        """Every delivery row of one item, oldest first."""
        return deliveries_where(self._session, Delivery.item_id == item_id)

    def delivered_versions(
        self, item_ids: Sequence[int], *, target: str | None = None
    ) -> dict[int, list[str]]:
        """Versions delivered per item (to `target`), oldest first (items with none left out)."""
        found: dict[int, list[str]] = {}
        for batch in batches(list(item_ids)):
            chosen = Delivery.item_id.in_(batch) & (Delivery.status == "delivered")
            if target is not None:
                chosen = chosen & (Delivery.target == target)
            rows = self._session.execute(
                select(Delivery.item_id, Delivery.version)
                .where(chosen)
                .order_by(Delivery.delivered_at, Delivery.id)
            )
            for item_id, version in rows:
                found.setdefault(item_id, []).append(version)
        return found

    def delivered_filings(self, item_ids: Sequence[int]) -> dict[int, list[tuple[str, int]]]:
        """(version, filing) delivered per item to any target, oldest first (items with
        none left out)."""
        found: dict[int, list[tuple[str, int]]] = {}
        for batch in batches(list(item_ids)):
            rows = self._session.execute(
                select(Delivery.item_id, Delivery.version, Delivery.filing)
                .where(Delivery.item_id.in_(batch) & (Delivery.status == "delivered"))
                .order_by(Delivery.delivered_at, Delivery.id)
            )
            for item_id, version, filing in rows:
                found.setdefault(item_id, []).append((version, int(filing)))
        return found

    def delivery_counts(self) -> list[DeliveryCount]:
        """Rows by delivery status."""
        rows = self._session.execute(
            select(Delivery.status, func.count())
            .group_by(Delivery.status)
            .order_by(Delivery.status)
        )
        return [DeliveryCount(status, int(n)) for status, n in rows]

    def delivery_counts_by_target(self) -> list[DeliveryCount]:
        """Rows by (target, delivery status)."""
        rows = self._session.execute(
            select(Delivery.target, Delivery.status, func.count())
            .group_by(Delivery.target, Delivery.status)
            .order_by(Delivery.target, Delivery.status)
        )
        return [DeliveryCount(status, int(n), target) for target, status, n in rows]

    def latest_delivered_before(self, delivery_id: int) -> DeliveryRecord | None:
        """The newest delivered row of the same item and target, older than `delivery_id`:
        the version the receiver holds, which the row's version replaces."""
        row = self.get_delivery(delivery_id)
        if row is None:
            return None
        found = deliveries_where(
            self._session,
            (Delivery.item_id == row.item_id)
            & (Delivery.target == row.target)
            & (Delivery.id < delivery_id)
            & (Delivery.status == "delivered"),
        )
        return found[-1] if found else None


def deliveries_where(session: Session, condition: ColumnElement[bool]) -> list[DeliveryRecord]:
    """The delivery rows matching `condition`, oldest first, as plain records."""
    query = select(DELIVERIES).where(condition).order_by(Delivery.id)
    return [DeliveryRecord(**row._asdict()) for row in session.execute(query)]


def _never_sent(row: Any) -> bool:
    """Pending or failed with no send of its series outstanding: safe to set aside."""
    return bool(row.status in _UNSENT and row.control_id is None)
