"""The item queries in memory (FakeItemQueries): what status, export and delivery read.

The SQL original is storage/queries.py.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from storage.records import ExportRow, ItemRecord, SourceFile, StatusCount
from tests.fakes.item_rows import find_row, under

if TYPE_CHECKING:
    from tests.fakes.store import _State


class FakeItemQueries:
    """ItemQueryRepository over a working copy of the state."""

    def __init__(self, state: _State) -> None:
        self._s = state

    def find_unsettled(
        self, files: Sequence[SourceFile], *, language: str, settled: Sequence[str]
    ) -> list[str]:
        def is_settled(file: SourceFile) -> bool:
            item = find_row(self._s, file.uri, language)
            if item is None or item.status not in settled:
                return False
            return (item.source_version, item.size_bytes) == (file.version, file.size_bytes)

        return [file.uri for file in files if not is_settled(file)]

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
        found = (find_row(self._s, uri, language) for uri in source_uris)
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
        return find_row(self._s, source_uri, language)

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
            and (source_prefix is None or under(i.source_uri, source_prefix))
        )

    def list_failures(self, *, limit: int = 20) -> list[ItemRecord]:
        return self.list_latest(status="failed", limit=limit)

    def list_latest(self, *, status: str, limit: int = 20) -> list[ItemRecord]:
        found = [i for i in self._s.items.values() if i.status == status]
        return sorted(found, key=lambda i: (i.updated_at, i.id), reverse=True)[:limit]

    def export_rows(
        self, *, status: str | None = None, language: str | None = None
    ) -> Iterator[ExportRow]:
        found = [
            i for i in self._s.items.values()
            if status in (None, i.status) and language in (None, i.language)
        ]  # fmt: skip
        for i in sorted(found, key=lambda i: (i.source_uri, i.language)):
            yield ExportRow(
                source=i.source_uri, language=i.language, status=i.status, text=i.text,
                error_kind=i.error_kind, error_message=i.error_message,
                duration_ms=i.duration_ms, chunks=i.chunk_count, attempts=i.attempts,
                sha256=i.sha256, updated_at=i.updated_at, flags=list(i.flags),
                metadata=dict(i.metadata),
            )  # fmt: skip

    def export_keys(self) -> Iterator[tuple[str, str]]:
        for i in sorted(self._s.items.values(), key=lambda i: i.id):
            yield i.source_uri, i.language

    def source_uris(self) -> Iterator[str]:
        yield from (i.source_uri for i in self._s.items.values())
