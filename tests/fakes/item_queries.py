"""The items repository's re-queueing, metadata and reading verbs, in memory.

A base of tests/fakes/store.py's FakeRepository (which supplies `_s`, `_find`, `_put`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from storage.owners import is_dead_local_owner
from storage.records import ExportRow, ItemRecord, StatusCount

_NO_LEASE: dict[str, Any] = {"lease_owner": None, "lease_expires_at": None, "lease_token": None}


def _now() -> datetime:
    return datetime.now(UTC)


def _under(uri: str, prefix: str) -> bool:
    itself = prefix.rstrip("/") or prefix
    return uri == itself or uri.startswith(prefix.rstrip("/") + "/")


class FakeItemQueries:
    """What the fake items repository reads and re-queues."""

    _s: Any

    def _find(self, uri: str, language: str) -> ItemRecord | None:
        raise NotImplementedError

    def _put(self, item: ItemRecord) -> None:
        raise NotImplementedError

    def release_dead_local_leases(self) -> int:
        dead = [
            i
            for i in self._s.items.values()
            if i.status == "processing" and i.lease_owner and is_dead_local_owner(i.lease_owner)
        ]
        for item in dead:
            self._put(replace(item, status="pending", updated_at=_now(), **_NO_LEASE))
        return len(dead)

    def requeue_failures(
        self,
        *,
        language: str | None,
        max_attempts: int,
        include_permanent: bool,
        include_skipped: bool = False,
        now: datetime | None = None,
    ) -> int:
        now = now or _now()

        def chosen(i: ItemRecord) -> bool:
            if language is not None and i.language != language:
                return False
            if include_skipped and i.status == "skipped":
                return True
            if i.status != "failed":
                return False
            due = i.next_attempt_at is None or i.next_attempt_at <= now
            return include_permanent or (i.retryable and i.attempts < max_attempts and due)

        picked = [i for i in self._s.items.values() if chosen(i)]
        for item in picked:
            self._put(replace(item, status="pending", next_attempt_at=None, **_NO_LEASE))
        return len(picked)

    def set_item_metadata(
        self, metadata_by_uri: Mapping[str, Mapping[str, str]], *, language: str | None
    ) -> int:
        changed = 0
        for item in list(self._s.items.values()):
            wanted = metadata_by_uri.get(item.source_uri)
            if wanted is None or language not in (None, item.language):
                continue
            if dict(item.metadata) != dict(wanted):
                self._put(replace(item, metadata=dict(wanted)))
                changed += 1
        return changed

    def done_items_page(
        self, *, language: str | None, after_id: int, limit: int, status: str = "done"
    ) -> list[ItemRecord]:
        found = [
            i
            for i in sorted(self._s.items.values(), key=lambda i: i.id)
            if i.status == status and i.id > after_id and language in (None, i.language)
        ]
        return found[:limit]

    def get_item(self, item_id: int) -> ItemRecord | None:
        return self._s.items.get(item_id)

    def find_items(self, *, source_uris: Sequence[str], language: str) -> dict[str, ItemRecord]:
        found = (self._find(uri, language) for uri in source_uris)
        return {item.source_uri: item for item in found if item is not None}

    def find_done_with_sha(self, *, sha256: str, language: str) -> ItemRecord | None:
        done = [
            i
            for i in self._s.items.values()
            if (i.sha256, i.language, i.status) == (sha256, language, "done")
        ]
        oldest = datetime.min.replace(tzinfo=UTC)
        done.sort(key=lambda i: (i.done_at or oldest, i.id), reverse=True)
        return done[0] if done else None

    def find_item(self, *, source_uri: str, language: str) -> ItemRecord | None:
        return self._find(source_uri, language)

    def status_counts(self) -> list[StatusCount]:
        counts: dict[tuple[str, str], list[int]] = {}
        for item in self._s.items.values():
            entry = counts.setdefault((item.language, item.status), [0, 0])
            entry[0] += 1
            entry[1] += item.duration_ms or 0
        return [StatusCount(st, lang, n, ms) for (lang, st), (n, ms) in sorted(counts.items())]

    def pending_count(self, *, language: str | None, source_prefix: str | None = None) -> int:
        return sum(
            1
            for i in self._s.items.values()
            if i.status == "pending"
            and language in (None, i.language)
            and (source_prefix is None or _under(i.source_uri, source_prefix))
        )

    def list_failures(self, *, limit: int = 20) -> list[ItemRecord]:
        return self.list_latest(status="failed", limit=limit)

    def list_latest(self, *, status: str, limit: int = 20) -> list[ItemRecord]:
        found = [i for i in self._s.items.values() if i.status == status]
        return sorted(found, key=lambda i: (i.updated_at, i.id), reverse=True)[:limit]

    def export_rows(self, *, status: str | None = None) -> Iterator[ExportRow]:
        found = [i for i in self._s.items.values() if status in (None, i.status)]
        for i in sorted(found, key=lambda i: (i.source_uri, i.language)):
            yield ExportRow(
                source=i.source_uri, language=i.language, status=i.status, text=i.text,
                error_kind=i.error_kind, error_message=i.error_message,
                duration_ms=i.duration_ms, chunks=i.chunk_count, attempts=i.attempts,
                sha256=i.sha256, updated_at=i.updated_at, flags=list(i.flags),
                metadata=dict(i.metadata),
            )  # fmt: skip

    def source_uris(self) -> Iterator[str]:
        yield from (i.source_uri for i in self._s.items.values())
