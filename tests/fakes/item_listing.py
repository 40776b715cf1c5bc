"""The items repository in memory (FakeItems): what a listing, a manifest or a rerun writes.

The SQL original is storage/items.py: register listings, record what cannot be read,
drop folder rows once the folder is listed, store the manifest's metadata, send
failures back to pending.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from storage.errors import SourceUnreadable
from storage.items import UNLISTED_FOLDER_VERSION, UNREADABLE_VERSION
from storage.records import ItemRecord, RegisterResult, SkippedFile, SourceFile
from tests.fakes.item_rows import NO_LEASE, fake_now, find_row, next_item_id, put_row

if TYPE_CHECKING:
    from tests.fakes.store import _State

_MESSAGE_MAX_CHARS = 4000


class FakeItems:
    """ItemRepository over a working copy of the state."""

    def __init__(self, state: _State) -> None:
        self._s = state

    def register_items(self, files: Sequence[SourceFile], *, language: str) -> RegisterResult:
        new = changed = unchanged = 0
        at = fake_now()
        for listed in {f.uri: f for f in files}.values():
            known = find_row(self._s, listed.uri, language)
            if known is None:
                self._insert(listed, language=language, now=at)
                new += 1
            elif (known.source_version, known.size_bytes) == (listed.version, listed.size_bytes):
                unchanged += 1
            else:
                changed += 1
                if not _leased(known, now=at):
                    put_row(self._s, _back_to_pending(known, listed, now=at))
        return RegisterResult(new=new, changed=changed, unchanged=unchanged)

    def record_unreadable(self, files: Sequence[SkippedFile], *, language: str) -> int:
        reasons = {f.uri: f.reason for f in files}
        folders = {f.uri for f in files if f.folder}
        at, recorded = fake_now(), 0
        for uri, reason in reasons.items():
            values = _unreadable(uri, reason, folder=uri in folders, now=at)
            known = find_row(self._s, uri, language)
            if known is None:
                self._insert_unreadable(uri, values, language=language, now=at)
                recorded += 1
            elif known.status in ("pending", "failed") and (
                known.error_message != values["error_message"]
            ):
                put_row(self._s, replace(known, **values))
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

    def set_item_metadata(
        self, metadata_by_uri: Mapping[str, Mapping[str, str]], *, language: str | None
    ) -> int:
        changed = 0
        for item in list(self._s.items.values()):
            wanted = metadata_by_uri.get(item.source_uri)
            if wanted is None or language not in (None, item.language) or item.status == "purged":
                continue
            if dict(item.metadata) != dict(wanted):
                put_row(self._s, replace(item, metadata=dict(wanted)))
                changed += 1
        return changed

    def requeue_failures(
        self,
        *,
        language: str | None,
        max_attempts: int,
        include_permanent: bool,
        include_skipped: bool = False,
        now: datetime | None = None,
    ) -> int:
        now = now or fake_now()

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
            put_row(self._s, replace(item, status="pending", next_attempt_at=None, **NO_LEASE))
        return len(picked)

    def _insert(self, listed: SourceFile, *, language: str, now: datetime) -> None:
        empty: dict[str, Any] = dict.fromkeys(
            ("sha256", "duration_ms", "error_kind", "error_message", "next_attempt_at",
             "lease_owner", "lease_expires_at", "text", "chunk_count", "done_at")
        )  # fmt: skip
        put_row(
            self._s,
            ItemRecord(
                id=next_item_id(self._s),
                source_uri=listed.uri,
                language=language,
                source_version=listed.version,
                size_bytes=listed.size_bytes,
                status="pending",
                retryable=False,
                attempts=0,
                extras={},
                created_at=now,
                updated_at=now,
                **empty,
            ),
        )

    def _insert_unreadable(
        self, uri: str, values: dict[str, Any], *, language: str, now: datetime
    ) -> None:
        empty: dict[str, Any] = dict.fromkeys(
            ("sha256", "duration_ms", "text", "chunk_count", "done_at")
        )
        put_row(
            self._s,
            ItemRecord(
                id=next_item_id(self._s), source_uri=uri, language=language, size_bytes=0,
                attempts=0, extras={}, created_at=now, **values, **empty,
            ),
        )  # fmt: skip


def _leased(item: ItemRecord, *, now: datetime) -> bool:
    expires = item.lease_expires_at
    return item.status == "processing" and expires is not None and expires > now


def _back_to_pending(item: ItemRecord, listed: SourceFile, *, now: datetime) -> ItemRecord:
    if item.status in ("done", "needs_review") and item.size_bytes == listed.size_bytes:
        return replace(  # touched: kept until hashed (storage/items.py `_touched`)
            item,
            source_version=listed.version,
            status="pending",
            attempts=0,
            next_attempt_at=None,
            duration_ms=None,
            extras={
                **item.extras,
                "touched": {"status": item.status, "duration_ms": item.duration_ms},
            },
            updated_at=now,
            **NO_LEASE,
        )
    return replace(
        item,
        source_version=listed.version,
        size_bytes=listed.size_bytes,
        status="pending",
        attempts=0,
        error_kind=None,
        error_message=None,
        retryable=False,
        next_attempt_at=None,
        text=None,
        duration_ms=None,
        chunk_count=None,
        extras={},
        flags=[],
        done_at=None,
        updated_at=now,
        **NO_LEASE,
    )


def _unreadable(uri: str, reason: str, *, folder: bool, now: datetime) -> dict[str, Any]:
    return {
        "source_version": UNLISTED_FOLDER_VERSION if folder else UNREADABLE_VERSION,
        "status": "failed",
        "error_kind": SourceUnreadable.kind,
        "error_message": f"cannot read {uri}: {reason}"[:_MESSAGE_MAX_CHARS],
        "retryable": False,
        "next_attempt_at": None,
        "updated_at": now,
        **NO_LEASE,
    }
