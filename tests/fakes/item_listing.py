"""The items repository's listing verbs (what a dry run must read, what cannot be read), in memory.

A base of tests/fakes/store.py's FakeRepository (which supplies `_s`, `_find`, `_put`);
the SQL originals are Items.record_unreadable and Items.resolve_listed_folders in
storage/items.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from storage.errors import SourceUnreadable
from storage.items import UNLISTED_FOLDER_VERSION, UNREADABLE_VERSION
from storage.records import ItemRecord, SkippedFile, SourceFile

_MESSAGE_MAX_CHARS = 4000
_NO_LEASE: dict[str, Any] = {"lease_owner": None, "lease_expires_at": None, "lease_token": None}


class FakeItemListing:
    """Record unreadable files and folders; drop folder rows once the folder is listed."""

    _s: Any

    def _find(self, uri: str, language: str) -> ItemRecord | None:
        raise NotImplementedError

    def _put(self, item: ItemRecord) -> None:
        raise NotImplementedError

    def find_unsettled(
        self, files: Sequence[SourceFile], *, language: str, settled: Sequence[str]
    ) -> list[str]:
        def is_settled(file: SourceFile) -> bool:
            item = self._find(file.uri, language)
            if item is None or item.status not in settled:
                return False
            return (item.source_version, item.size_bytes) == (file.version, file.size_bytes)

        return [file.uri for file in files if not is_settled(file)]

    def record_unreadable(self, files: Sequence[SkippedFile], *, language: str) -> int:
        reasons = {f.uri: f.reason for f in files}
        folders = {f.uri for f in files if f.folder}
        now, recorded = datetime.now(UTC), 0
        for uri, reason in reasons.items():
            values = _unreadable(uri, reason, folder=uri in folders, now=now)
            known = self._find(uri, language)
            if known is None:
                self._insert_unreadable(uri, values, language=language, now=now)
                recorded += 1
            elif known.status in ("pending", "failed") and (
                known.error_message != values["error_message"]
            ):
                self._put(replace(known, **values))
                recorded += 1
        return recorded

    def resolve_listed_folders(self, *, root: str, unlisted: Sequence[str], language: str) -> int:
        prefix = root.rstrip("/") + "/"
        gone = [
            item.id
            for item in self._s.items.values()
            if (item.language, item.source_version, item.status)
            == (language, UNLISTED_FOLDER_VERSION, "failed")
            and (item.source_uri == root or item.source_uri.startswith(prefix))
            and item.source_uri not in unlisted
        ]
        for item_id in gone:
            del self._s.items[item_id]
        return len(gone)

    def _insert_unreadable(
        self, uri: str, values: dict[str, Any], *, language: str, now: datetime
    ) -> None:
        item_id, self._s.next_id = self._s.next_id, self._s.next_id + 1
        empty: dict[str, Any] = dict.fromkeys(
            ("sha256", "duration_ms", "text", "chunk_count", "done_at")
        )
        self._put(
            ItemRecord(
                id=item_id, source_uri=uri, language=language, size_bytes=0, attempts=0,
                extras={}, created_at=now, **values, **empty,
            )
        )  # fmt: skip


def _unreadable(uri: str, reason: str, *, folder: bool, now: datetime) -> dict[str, Any]:
    return {
        "source_version": UNLISTED_FOLDER_VERSION if folder else UNREADABLE_VERSION,
        "status": "failed",
        "error_kind": SourceUnreadable.kind,
        "error_message": f"cannot read {uri}: {reason}"[:_MESSAGE_MAX_CHARS],
        "retryable": False,
        "next_attempt_at": None,
        "updated_at": now,
        **_NO_LEASE,
    }
