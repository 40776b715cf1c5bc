"""The deliveries repository (`uow.deliveries`): one row per (item, version, target).

A transcript version names exactly what a receiver would get: the recording's content
(sha256 of the audio), the language and the text we hold for it. Either changing is a
new version, delivered once per target; the same transcript uploaded again is not. The
format (txt or FHIR) is not part of it: switching formats must not file the same note
twice.

Rows are claimed on the one work queue (storage/work_queue.py): a token per claim,
renewal, the store's clock, the dead taken back. `mark_sending` commits `sending_at`
just before a request goes out; from then on a row whose answer was not recorded
(holder killed, lease lapsed, stopped mid-request) becomes `in_doubt`, never pending:
the receiver may have filed it. Only `resend_in_doubt` (a person's decision) sends it
back to pending.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, cast

from sqlalchemy import ColumnElement, Table, exists, func, select, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session, aliased

from storage import clock
from storage.errors import SchemaOutdated
from storage.models import Delivery, StoreIdentity
from storage.queries import batches
from storage.records import DeliveryCount, DeliveryRecord, SentIdentity, WantedDelivery
from storage.versions import item_version, plan_version, transcript_version
from storage.work_queue import WorkQueue, ended_with_error

DELIVERIES = cast(Table, Delivery.__table__)
_UNSENT = ("pending", "failed")
# A row that may still be filed, or is about to go: a newer version of its note waits.
_UNSETTLED = ("pending", "processing", "in_doubt")

__all__ = [
    "Deliveries",
    "DeliveryCount",
    "WantedDelivery",
    "item_version",
    "transcript_version",
]


class Deliveries:
    """Plan, claim, settle and read deliveries inside one session."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self._queue = WorkQueue(session, Delivery, doubt_when=Delivery.sending_at.is_not(None))

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
        return self._deliveries_where(chosen)

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
        return self._deliveries_where(Delivery.id.in_(ids))

    def renew_deliveries(self, lease_tokens: Sequence[str], *, lease_s: float) -> frozenset[str]:
        """Extend these claims' leases on the store's clock; returns the tokens lost."""
        return self._queue.renew(lease_tokens, lease_s=lease_s)

    def store_identity(self) -> str:
        """This store's own name (made once per database by a migration)."""
        found = self._session.scalar(select(StoreIdentity.store_id).where(StoreIdentity.id == 1))
        if not found:
            raise SchemaOutdated("the database has no store identity; run `medasr db upgrade`")
        return found

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
            status="delivered",
            **formats,
            response=response,
            remote_id=remote_id,
            delivered_at=clock.host_now(),
            error_kind=None,
            error_message=None,
            retryable=False,
            sent_text=None,
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
                status="delivered",
                response=response,
                remote_id=remote_id,
                delivered_at=clock.host_now(),
                error_kind=None,
                error_message=None,
                retryable=False,
                sent_text=None,
                updated_at=clock.host_now(),
                lease_owner=None,
                lease_expires_at=None,
                lease_token=None,
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

    def get_delivery(self, delivery_id: int) -> DeliveryRecord | None:
        """One delivery row by id."""
        found = self._deliveries_where(Delivery.id == delivery_id)
        return found[0] if found else None

    def deliveries_of_item(self, item_id: int) -> list[DeliveryRecord]:
        """Every delivery row of one item, oldest first."""
        return self._deliveries_where(Delivery.item_id == item_id)

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
        found = self._deliveries_where(
            (Delivery.item_id == row.item_id)
            & (Delivery.target == row.target)
            & (Delivery.id < delivery_id)
            & (Delivery.status == "delivered")
        )
        return found[-1] if found else None

    def _deliveries_where(self, condition: ColumnElement[bool]) -> list[DeliveryRecord]:
        query = select(DELIVERIES).where(condition).order_by(Delivery.id)
        return [DeliveryRecord(**row._asdict()) for row in self._session.execute(query)]


def _never_sent(row: Any) -> bool:
    """Pending or failed with no send of its series outstanding: safe to set aside."""
    return bool(row.status in _UNSENT and row.control_id is None)


def _older_version_unsettled() -> ColumnElement[bool]:
    """An older row of the same item and target is still unsettled (may be filed)."""
    older = aliased(Delivery)
    return exists().where(
        older.item_id == Delivery.item_id,
        older.target == Delivery.target,
        older.id < Delivery.id,
        older.status.in_(_UNSETTLED),
    )
