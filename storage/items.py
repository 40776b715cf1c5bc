"""The items repository (`uow.items`): register listings, claim, fingerprint, settle, query.

One recording in one language is one item. Claiming lives in storage/claims.py (on the
one work queue, storage/work_queue.py), reading in storage/queries.py; this module
writes: registering listings, unreadable files, fingerprints, an item's end, metadata.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import and_, delete, or_, select, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from storage import clock
from storage.claims import Claims
from storage.errors import LeaseLost, SourceUnreadable
from storage.models import ChunkRow, Item
from storage.queries import ITEMS, batches
from storage.records import ItemRecord, RegisterResult, SkippedFile, SourceFile
from storage.registration import (
    any_registered,
    encode_files,
    find_differing,
    find_unsettled,
    insert_new,
)
from storage.work_queue import cleared_lease

__all__ = ["UNREADABLE_VERSION", "Items"]

_MESSAGE_MAX_CHARS = 4000
# The version an unreadable file is recorded with: any real listing differs, so the file
# goes back to pending as soon as it can be read.
UNREADABLE_VERSION = "unreadable"
# ... and a folder or bucket prefix that could not be listed: its row goes once it is.
UNLISTED_FOLDER_VERSION = "unlisted folder"
# Listed files compared and inserted per statement (one JSON parameter: no IN-list limit).
REGISTER_BATCH = 5000


class Items(Claims):
    """Register, claim, settle and read items inside one session."""

    def register_items(self, files: Sequence[SourceFile], *, language: str) -> RegisterResult:
        """Upsert listed files: new -> pending; changed -> back to pending.

        A file is changed when its version (mtime or ETag) or its size differs. An item
        being processed under a live lease keeps its old version, so the next listing
        sees the change again once that worker is done; under an expired lease it goes
        back to pending with the new version (its late worker then gets LeaseLost).
        The old sha256 and chunks stay until re-fingerprinted.
        """
        unique = list({f.uri: f for f in files}.values())
        now = self._queue.now()  # leases lapse on the store's clock
        new = changed = 0
        for batch in batches(unique, REGISTER_BATCH):
            ours, relisted = self._register_batch(batch, language=language, now=now)
            new, changed = new + ours, changed + relisted
        return RegisterResult(new=new, changed=changed, unchanged=len(unique) - new - changed)

    def _register_batch(
        self, batch: Sequence[SourceFile], *, language: str, now: datetime
    ) -> tuple[int, int]:
        """Register one batch; returns (new, changed). A batch whose URI range holds no
        item yet (a new folder) is inserted without being compared first; the insert's
        count tells whether that held (another run may have inserted some meanwhile)."""
        listed = encode_files(batch)
        ours = 0
        if not any_registered(self._session, batch, language=language):
            ours = insert_new(self._session, listed, language=language, now=now)
            if ours == len(batch):
                return ours, 0
        differing = find_differing(self._session, listed, language=language)
        inserts = [batch[row.position] for row in differing if row.id is None]
        relisted = {row.id: batch[row.position] for row in differing if row.id is not None}
        if inserts:
            encoded = listed if len(inserts) == len(batch) else encode_files(inserts)
            ours += insert_new(self._session, encoded, language=language, now=now)
        if relisted:
            self._back_to_pending(relisted, now=now)
        return ours, len(relisted)

    def _back_to_pending(self, relisted: Mapping[int, SourceFile], *, now: datetime) -> None:
        """Changed files go back to pending, except those a worker holds under a live lease."""
        held = self._session.execute(
            select(Item.id).where(
                Item.id.in_(list(relisted)),
                Item.status == "processing",
                Item.lease_expires_at.is_not(None),
                Item.lease_expires_at > now,
            )
        )
        leased = set(held.scalars())
        updates = [_pending_again(i, f, now=now) for i, f in relisted.items() if i not in leased]
        if updates:
            self._session.execute(update(Item), updates)

    def find_unsettled(
        self, files: Sequence[SourceFile], *, language: str, settled: Sequence[str]
    ) -> list[str]:
        """URIs of listed files that are new, changed or not in a `settled` status (one
        query per batch; no transcript is read)."""
        found: list[str] = []
        for batch in batches(list(files), REGISTER_BATCH):
            found += find_unsettled(self._session, batch, language=language, settled=settled)
        return found

    def _insert_new_items(self, rows: list[dict[str, Any]]) -> int:
        """Insert items another run may be registering at this moment; returns how many were ours.

        Two flow runs over the same source (workers on several hosts) list the same new
        files at once: the loser of the race skips the row instead of failing its run.
        """
        dialect = self._session.get_bind().dialect.name
        statement = (postgresql_insert if dialect == "postgresql" else sqlite_insert)(ITEMS)
        inserted = self._session.execute(
            statement.on_conflict_do_nothing(index_elements=["source_uri", "language"]).returning(
                ITEMS.c.id
            ),
            rows,
        )
        return len(inserted.all())

    def record_unreadable(self, files: Sequence[SkippedFile], *, language: str) -> int:
        """Record listed files that cannot be read as failed (source_unreadable, permanent).

        Returns how many items newly became so. Done, skipped and in-progress items are
        left alone; a file readable again is sent back to pending by the next listing.
        """
        by_uri = {f.uri: f.reason for f in files}
        folders = {f.uri for f in files if f.folder}
        now, recorded = clock.host_now(), 0
        for batch in batches(list(by_uri), self._uri_batch_size()):
            known = {
                row.source_uri: row
                for row in self._session.execute(
                    select(Item.id, Item.source_uri, Item.status, Item.error_message).where(
                        Item.language == language, self._uri_in(batch)
                    )
                )
            }
            inserts, updates = [], []
            for uri in batch:
                values = _unreadable(uri, by_uri[uri], now=now)
                if uri in folders:
                    values["source_version"] = UNLISTED_FOLDER_VERSION
                row = known.get(uri)
                if row is None:
                    inserts.append(_new_unreadable_item(uri, values, language=language, now=now))
                elif row.status in ("pending", "failed") and (
                    row.error_message != values["error_message"]
                ):
                    updates.append({"id": row.id, **values})
            if inserts:
                recorded += self._insert_new_items(inserts)
            if updates:
                self._session.execute(update(Item), updates)
            recorded += len(updates)
        return recorded

    def resolve_listed_folders(self, *, root: str, unlisted: Sequence[str], language: str) -> int:
        """Remove the rows of folders under `root` that were listed this time (not in
        `unlisted`): their files now have rows of their own. Returns how many went."""
        statement = delete(Item).where(
            Item.language == language,
            Item.source_version == UNLISTED_FOLDER_VERSION,
            Item.status == "failed",
            or_(
                Item.source_uri == root,
                Item.source_uri.startswith(root.rstrip("/") + "/", autoescape=True),
            ),
        )
        if unlisted:
            statement = statement.where(Item.source_uri.not_in(list(unlisted)))
        return int(self._session.execute(statement).rowcount or 0)  # type: ignore[attr-defined]

    def set_fingerprint(
        self, item_id: int, *, sha256: str, size_bytes: int, lease_token: str | None
    ) -> None:
        """Record the content fingerprint; different content drops the old chunks. LeaseLost."""
        held = self._queue.held_row(item_id, lease_token=lease_token, columns=("sha256",))
        if held is None:
            raise LeaseLost(f"item {item_id} is no longer held by this worker")
        if held.sha256 is not None and held.sha256 != sha256:  # its old chunks are void
            self._session.execute(delete(ChunkRow).where(ChunkRow.item_id == item_id))
        self._queue.touch(item_id, lease_token=lease_token, sha256=sha256, size_bytes=size_bytes)

    def finish_item(
        self,
        item_id: int,
        *,
        lease_token: str | None,
        text: str,
        duration_ms: int | None,
        chunk_count: int,
        extras: Mapping[str, Any],
        flags: Sequence[str] = (),
        hold_for_review: bool = False,
    ) -> None:
        """Mark our item done with its transcript, or needs_review when the quality gate
        flagged it or every transcript waits for a person (`hold_for_review`); raises
        LeaseLost if it is no longer ours."""
        now = clock.host_now()
        self._settle(
            item_id,
            lease_token=lease_token,
            status="needs_review" if flags or hold_for_review else "done",
            flags=list(flags) or None,
            text=text,
            machine_text=None,
            duration_ms=duration_ms,
            chunk_count=chunk_count,
            extras=dict(extras),
            done_at=now,
            error_kind=None,
            error_message=None,
            retryable=False,
            next_attempt_at=None,
        )

    def skip_item(
        self,
        item_id: int,
        *,
        lease_token: str | None,
        reason_kind: str,
        reason: str,
        duration_ms: int | None = None,
    ) -> None:
        """Mark our item skipped (silent, empty...) with the reason; raises LeaseLost."""
        self._settle(
            item_id,
            lease_token=lease_token,
            status="skipped",
            error_kind=reason_kind,
            error_message=reason[:_MESSAGE_MAX_CHARS],
            duration_ms=duration_ms,
            retryable=False,
            next_attempt_at=None,
            done_at=clock.host_now(),
        )

    def fail_item(
        self,
        item_id: int,
        *,
        lease_token: str | None,
        error_kind: str,
        message: str,
        retryable: bool,
        next_attempt_at: datetime | None,
    ) -> None:
        """Mark our item failed with its error and when it may be retried; raises LeaseLost."""
        self._settle(
            item_id,
            lease_token=lease_token,
            status="failed",
            error_kind=error_kind,
            error_message=message[:_MESSAGE_MAX_CHARS],
            retryable=retryable,
            next_attempt_at=next_attempt_at,
        )

    def _settle(self, item_id: int, *, lease_token: str | None, **values: Any) -> None:
        self._queue.settle(item_id, lease_token=lease_token, **values)

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


def _unreadable(uri: str, reason: str, *, now: datetime) -> dict[str, Any]:
    return {
        "source_version": UNREADABLE_VERSION,
        "status": "failed",
        "error_kind": SourceUnreadable.kind,
        "error_message": f"cannot read {uri}: {reason}"[:_MESSAGE_MAX_CHARS],
        "retryable": False,
        "next_attempt_at": None,
        "updated_at": now,
        **cleared_lease(),
    }


def _new_unreadable_item(
    uri: str, values: dict[str, Any], *, language: str, now: datetime
) -> dict[str, Any]:
    return {
        **values,
        "source_uri": uri,
        "language": language,
        "size_bytes": 0,
        "attempts": 0,
        "created_at": now,
    }


def _pending_again(item_id: int, listed: SourceFile, *, now: datetime) -> dict[str, Any]:
    """Changed content: forget the old result (the sha256 stays until re-fingerprinted)."""
    return {
        "id": item_id,
        "source_version": listed.version,
        "size_bytes": listed.size_bytes,
        "status": "pending",
        "attempts": 0,
        "error_kind": None,
        "error_message": None,
        "retryable": False,
        "next_attempt_at": None,
        "text": None,
        "duration_ms": None,
        "chunk_count": None,
        "extras": None,
        "flags": None,
        "done_at": None,
        "updated_at": now,
        **cleared_lease(),
    }
