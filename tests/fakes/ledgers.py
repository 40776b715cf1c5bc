"""In-memory runs, listings, reviews and deliveries for the fake store (tests/fakes/store.py).

They follow the SQL repositories (storage/runs.py, reviews.py, deliveries.py) rule for
rule; tests/storage/test_store_conformance.py runs the same scenarios on both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from storage.errors import NotUnderReview
from storage.records import (
    DeliveryCount,
    DeliveryRecord,
    ItemRecord,
    NotAudioListing,
    QueueSize,
    RunRecord,
    WantedDelivery,
)
from storage.versions import plan_version

if TYPE_CHECKING:
    from tests.fakes.store import _State

_UNSENT = ("pending", "failed")


def _now() -> datetime:
    return datetime.now(UTC)


class FakeRuns:
    """RunRepository in memory."""

    def __init__(self, state: _State) -> None:
        self._s = state

    def start_run(self, *, source: str, language: str) -> int:
        run_id = len(self._s.runs) + 1
        self._s.runs[run_id] = RunRecord(
            id=run_id,
            started_at=_now(),
            finished_at=None,
            source=source,
            language=language,
            status="running",
            counts={},
        )
        return run_id

    def finish_run(self, run_id: int, *, counts: Mapping[str, int], status: str) -> None:
        run = self._s.runs[run_id]
        self._s.runs[run_id] = replace(
            run, status=status, finished_at=_now(), counts={k: int(v) for k, v in counts.items()}
        )

    def run_sources(self) -> list[str]:
        return sorted({run.source for run in self._s.runs.values()} | set(self._s.listed))

    def latest_runs(self, *, limit: int = 5) -> list[RunRecord]:
        return sorted(self._s.runs.values(), key=lambda r: -r.id)[:limit]


class FakeListings:
    """ListingRepository in memory."""

    def __init__(self, state: _State) -> None:
        self._s = state

    def note_source(self, uri: str) -> int:
        if uri not in self._s.listed:
            self._s.listed[uri] = NotAudioListing(uri, _now(), 0, {}, [])
        return sorted(self._s.listed).index(uri) + 1

    def record_not_audio(
        self, uri: str, *, count: int, by_reason: Mapping[str, int], names: Sequence[str]
    ) -> None:
        self._s.listed[uri] = NotAudioListing(uri, _now(), count, dict(by_reason), list(names))

    def not_audio(self) -> list[NotAudioListing]:
        return [self._s.listed[uri] for uri in sorted(self._s.listed) if self._s.listed[uri].count]

    def forget_not_audio(self) -> int:
        removed = sum(len(listing.names) for listing in self._s.listed.values())
        self._s.listed = {
            uri: replace(listing, count=0, by_reason={}, names=[])
            for uri, listing in self._s.listed.items()
        }
        return removed

    def sources(self) -> list[str]:
        return sorted(self._s.listed)


class FakeReviews:
    """ReviewRepository in memory."""

    def __init__(self, state: _State) -> None:
        self._s = state

    def queue_size(self) -> QueueSize:
        waiting = [i.updated_at for i in self._s.items.values() if i.status == "needs_review"]
        return QueueSize(waiting=len(waiting), oldest=min(waiting, default=None))

    def list_needs_review(self, *, language: str | None = None, limit: int = 0) -> list[ItemRecord]:
        found = [
            i
            for i in self._s.items.values()
            if i.status == "needs_review" and language in (None, i.language)
        ]
        found.sort(key=lambda i: (i.updated_at, i.id))
        return found[:limit] if limit else found

    def accept_review(self, item_id: int, *, by: str | None = None) -> ItemRecord:
        item = self._under_review(item_id)
        now = _now()
        review = {"accepted_at": now.isoformat(), "flags": item.flags}
        if by is not None:
            review |= {"by": by, "at": now.isoformat()}
        extras = {**item.extras, "review": review}
        done = replace(item, status="done", flags=[], extras=extras, updated_at=now)
        self._s.items[item_id] = done
        return done

    def resend_review(self, item_id: int) -> ItemRecord:
        item = self._under_review(item_id)
        for key in [k for k in self._s.chunks if k[0] == item_id]:
            del self._s.chunks[key]
        again = replace(
            item,
            status="pending",
            text=None,
            flags=[],
            extras={},
            chunk_count=None,
            done_at=None,
            next_attempt_at=None,
            updated_at=_now(),
        )
        self._s.items[item_id] = again
        return again

    def _under_review(self, item_id: int) -> ItemRecord:
        item = self._s.items.get(item_id)
        if item is None:
            raise NotUnderReview(f"there is no item {item_id} (see `medasr review` for the list)")
        if item.status != "needs_review":
            raise NotUnderReview(
                f"item {item_id} is {item.status}, not needs_review; nothing was changed"
            )
        return item


class FakeDeliveries:
    """DeliveryRepository in memory: plan, send back, read (storage/deliveries.py)."""

    def __init__(self, state: _State) -> None:
        self._s = state

    def plan_deliveries(self, wanted: Sequence[WantedDelivery], *, format_name: str) -> int:
        added = 0
        for want in wanted:
            rows = [r for r in delivery_rows(self._s, want.item_id) if r.target == want.target]
            for row in rows:
                if row.version != want.version and row.status in _UNSENT and not row.control_id:
                    put_delivery(self._s, replace(row, status="superseded"))
            plan = plan_version(rows, version=want.version)
            if plan.action == "revive" and plan.row_id is not None:
                row = self._s.deliveries[plan.row_id]
                put_delivery(
                    self._s,
                    replace(row, status="pending", attempts=0, replaces_id=plan.replaces_id),
                )
            elif plan.action in ("new", "refile"):
                self._insert(
                    want, format_name=format_name, replaces_id=plan.replaces_id, filing=plan.filing
                )
            else:
                continue
            added += 1
        return added

    def requeue_delivery_failures(self, *, max_attempts: int) -> int:
        chosen = [
            r
            for r in self._s.deliveries.values()
            if r.status == "failed" and r.retryable and r.attempts < max_attempts
        ]
        for row in chosen:
            put_delivery(self._s, replace(row, status="pending", sending_at=None))
        return len(chosen)

    def resend_in_doubt(self, *, language: str | None = None, target: str | None = None) -> int:
        chosen = [
            r
            for r in self._s.deliveries.values()
            if r.status == "in_doubt"
            and language in (None, r.language)
            and target in (None, r.target)
        ]
        for row in chosen:
            put_delivery(self._s, replace(row, status="pending", sending_at=None))
        return len(chosen)

    def in_doubt_deliveries(
        self, *, language: str | None = None, target: str | None = None
    ) -> list[DeliveryRecord]:
        return [
            r
            for r in sorted(self._s.deliveries.values(), key=lambda r: r.id)
            if r.status == "in_doubt"
            and language in (None, r.language)
            and target in (None, r.target)
        ]

    def store_identity(self) -> str:
        return self._s.store_id

    def latest_delivered_before(self, delivery_id: int) -> DeliveryRecord | None:
        row = self._s.deliveries.get(delivery_id)
        if row is None:
            return None
        found = [
            r
            for r in delivery_rows(self._s, row.item_id)
            if r.target == row.target and r.id < delivery_id and r.status == "delivered"
        ]
        return found[-1] if found else None

    def get_delivery(self, delivery_id: int) -> DeliveryRecord | None:
        return self._s.deliveries.get(delivery_id)

    def deliveries_of_item(self, item_id: int) -> list[DeliveryRecord]:
        return delivery_rows(self._s, item_id)

    def delivered_versions(
        self, item_ids: Sequence[int], *, target: str | None = None
    ) -> dict[int, list[str]]:
        found: dict[int, list[str]] = {}
        for row in sorted(self._s.deliveries.values(), key=lambda r: (r.delivered_at, r.id)):
            if (
                row.item_id in item_ids
                and row.status == "delivered"
                and target in (None, row.target)
            ):
                found.setdefault(row.item_id, []).append(row.version)
        return found

    def delivered_filings(self, item_ids: Sequence[int]) -> dict[int, list[tuple[str, int]]]:
        found: dict[int, list[tuple[str, int]]] = {}
        for row in sorted(self._s.deliveries.values(), key=lambda r: (r.delivered_at, r.id)):
            if row.item_id in item_ids and row.status == "delivered":
                found.setdefault(row.item_id, []).append((row.version, row.filing))
        return found

    def delivery_counts(self) -> list[DeliveryCount]:
        counts: dict[str, int] = {}
        for row in self._s.deliveries.values():
            counts[row.status] = counts.get(row.status, 0) + 1
        return [DeliveryCount(status, n) for status, n in sorted(counts.items())]

    def delivery_counts_by_target(self) -> list[DeliveryCount]:
        counts: dict[tuple[str, str], int] = {}
        for row in self._s.deliveries.values():
            key = (row.target, row.status)
            counts[key] = counts.get(key, 0) + 1
        return [DeliveryCount(status, n, target) for (target, status), n in sorted(counts.items())]

    def _insert(
        self, want: WantedDelivery, *, format_name: str, replaces_id: int | None, filing: int = 0
    ) -> None:
        now = _now()
        row_id = max(self._s.deliveries, default=0) + 1
        self._s.deliveries[row_id] = DeliveryRecord(
            id=row_id,
            item_id=want.item_id,
            language=want.language,
            version=want.version,
            format=format_name,
            status="pending",
            attempts=0,
            retryable=False,
            error_kind=None,
            error_message=None,
            lease_owner=None,
            lease_expires_at=None,
            response=None,
            replaces_id=replaces_id,
            created_at=now,
            updated_at=now,
            delivered_at=None,
            target=want.target,
            filing=filing,
        )


def delivery_rows(state: _State, item_id: int) -> list[DeliveryRecord]:
    """One item's delivery rows, oldest first."""
    return sorted(
        (r for r in state.deliveries.values() if r.item_id == item_id), key=lambda r: r.id
    )


def put_delivery(state: _State, row: DeliveryRecord) -> None:
    """Write one delivery row."""
    state.deliveries[row.id] = row
