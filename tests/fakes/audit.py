"""The audit trail in memory: the same chain as the SQL store (storage/audit_chain.py)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from storage.audit_chain import GENESIS, seal_event
from storage.audit_records import AuditEvent, AuditFilter, NewAuditEvent


class FakeAudit:
    """AuditRepository over a dict of events by sequence number (the fake's state)."""

    def __init__(self, events: dict[int, AuditEvent]) -> None:
        self._events = events

    def append(self, event: NewAuditEvent) -> AuditEvent:
        newest = self.newest_event()
        seq, prev_hash = (newest.seq + 1, newest.hash) if newest else (1, GENESIS)
        stored = seal_event(event, seq=seq, occurred_at=datetime.now(UTC), prev_hash=prev_hash)
        self._events[seq] = stored
        return stored

    def newest_event(self, *, action: str | None = None) -> AuditEvent | None:
        found = [s for s, e in self._events.items() if action in (None, e.action)]
        return self._events[max(found)] if found else None

    def find_by_hash(self, event_hash_hex: str) -> AuditEvent | None:
        return next((e for e in self._events.values() if e.hash == event_hash_hex), None)

    def chain(self, *, after_seq: int | None = None) -> Iterator[AuditEvent]:
        start = -(2**63) if after_seq is None else after_seq
        return iter([self._events[s] for s in sorted(self._events) if s > start])

    def events(self, selection: AuditFilter) -> Iterator[AuditEvent]:
        return (event for event in self.chain() if _passes(event, selection))


def _passes(event: AuditEvent, selection: AuditFilter) -> bool:
    actor = selection.actor
    return (
        (selection.since is None or event.occurred_at >= selection.since)
        and (selection.until is None or event.occurred_at < selection.until)
        and (actor is None or event.actor == actor or event.actor.startswith(f"os:{actor}@"))
        and (selection.item_id is None or event.item_id == selection.item_id)
        and (selection.action is None or event.action == selection.action)
    )


class FakeRetention:
    """RetentionRepository over the fake's items: the default rule without deliveries."""

    def __init__(self, items: dict[int, Any]) -> None:
        self._items = items

    def _taken(self, item: Any, selection: Any) -> bool:
        finished = item.done_at or item.updated_at
        return (
            item.status in ("done", "skipped", "needs_review", "failed")
            and finished < selection.finished_before
            and selection.language in (None, item.language)
            and (selection.include_undelivered or item.status in ("done", "skipped"))
        )

    def purgeable_ids(self, selection: Any, *, after_id: int, limit: int) -> list[int]:
        ids = sorted(i for i, item in self._items.items() if self._taken(item, selection))
        return [i for i in ids if i > after_id][:limit]

    def kept_counts(self, selection: Any) -> list[Any]:
        return []

    def purge_items(self, item_ids: Any, *, purged_by: str, receipt_key: bytes) -> list[Any]:
        from dataclasses import replace

        from storage.retention_records import PurgedItem

        purged = []
        for item_id in sorted(item_ids):
            item = self._items[item_id]
            if item.status == "purged":
                continue
            finished = item.done_at or item.updated_at
            purged.append(PurgedItem(item_id, item.language, item.status, finished, "0" * 64))
            self._items[item_id] = replace(item, status="purged", text=None, metadata={})
        return purged

    def delivery_ids_of(self, item_ids: Any) -> list[int]:
        return []
