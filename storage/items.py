"""The items repository (`uow.items`): what a listing, a manifest or a rerun writes.

One recording in one language is one item. This module writes outside any claim:
registering listings, unreadable files and folders, the manifest's metadata, failures
sent back to pending. A holder of a claim works through storage/claims.py
(`uow.claims`), readers through storage/queries.py (`uow.item_queries`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, and_, delete, or_, select, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from storage import clock
from storage.errors import SourceUnreadable
from storage.models import ChunkRow, Item
from storage.queries import ITEMS, batches, uri_batch_size, uri_in
from storage.records import ItemStatus, RegisterResult, SkippedFile, SourceFile
from storage.registration import (
    REGISTER_BATCH,
    any_registered,
    encode_files,
    find_differing,
    insert_new,
)
from storage.work_queue import WorkQueue, cleared_lease, ended_with_error

__all__ = ["UNREADABLE_VERSION", "Items"]

# The version an unreadable file is recorded with: any real listing differs, so the file
# goes back to pending as soon as it can be read.
UNREADABLE_VERSION = "unreadable"
# ... and a folder or bucket prefix that could not be listed: its row goes once it is.
UNLISTED_FOLDER_VERSION = "unlisted folder"
# Relisted with their old size, these keep what they hold until the bytes are hashed.
_KEPT_WHEN_TOUCHED = (ItemStatus.PURGED, ItemStatus.DONE, ItemStatus.NEEDS_REVIEW)


class Items:
    """Register listed, unreadable and re-queued items inside one session."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self._queue = WorkQueue(session, Item)

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
        """Changed files go back to pending, except those a worker holds under a live lease.

        A file listed with a new version but its old size may hold the same bytes (touched: a
        backup restored, a copy). A purged one keeps its purge receipt (extras) and sha256:
        the worker that hashes it settles it purged again when the bytes are the same, so
        touching a file never buys its transcript twice. A done or held one keeps its
        transcript, review and finish time, its status noted under extras["touched"]: the
        worker settles it as it was when the bytes are the same (storage/claims.py
        `keep_result`), and forgets it all when they are not. One query finds these and the
        leased rows."""
        live_lease = and_(
            Item.status == ItemStatus.PROCESSING,
            Item.lease_expires_at.is_not(None),
            Item.lease_expires_at > now,
        )
        special = self._session.execute(
            select(Item.id, Item.status, Item.size_bytes, Item.extras, Item.duration_ms).where(
                Item.id.in_(list(relisted)), or_(live_lease, Item.status.in_(_KEPT_WHEN_TOUCHED))
            )
        ).all()
        leased = {row.id for row in special if row.status == ItemStatus.PROCESSING}
        same_size = {
            row.id: row
            for row in special
            if row.status in _KEPT_WHEN_TOUCHED and row.size_bytes == relisted[row.id].size_bytes
        }
        updates = [
            _relisted(i, f, now=now, same_size=same_size.get(i))
            for i, f in relisted.items()
            if i not in leased
        ]
        by_columns: dict[tuple[str, ...], list[dict[str, Any]]] = {}
        for values in updates:  # one statement per set of columns
            by_columns.setdefault(tuple(sorted(values)), []).append(values)
        for batch in by_columns.values():
            self._session.execute(update(Item), batch)

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
        for batch in batches(list(by_uri), uri_batch_size(self._session)):
            known = {
                row.source_uri: row
                for row in self._session.execute(
                    select(Item.id, Item.source_uri, Item.status, Item.error_message).where(
                        Item.language == language, uri_in(self._session, batch)
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

    def set_item_metadata(
        self, metadata_by_uri: Mapping[str, Mapping[str, str]], *, language: str | None
    ) -> int:
        """Store the manifest's columns on the items (of `language`); returns rows changed.
        A purged item never takes patient data again."""
        changed = 0
        uris = list(metadata_by_uri)
        for batch in batches(uris, uri_batch_size(self._session)):
            condition = and_(uri_in(self._session, batch), Item.status != ItemStatus.PURGED)
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

    def requeue_failures(
        self,
        *,
        language: str | None,
        max_attempts: int,
        include_permanent: bool,
        include_skipped: bool = False,
        now: datetime | None = None,
    ) -> int:
        """Send failures back to pending; returns how many.

        Without `include_permanent`: retryable failures under `max_attempts` whose
        next-attempt time has come. With it: every failed item (of `language`).
        `include_skipped`: every skipped item too, its silent chunks forgotten so the
        next run judges its audio afresh (they cost nothing to judge again).
        """
        now = now or clock.host_now()
        failed: list[ColumnElement[bool]] = [Item.status == "failed"]
        if not include_permanent:
            failed += [
                Item.retryable.is_(True),
                Item.attempts < max_attempts,
                or_(Item.next_attempt_at.is_(None), Item.next_attempt_at <= now),
            ]
        chosen = and_(*failed)
        if include_skipped:
            chosen = or_(chosen, Item.status == "skipped")
            self._forget_silent_chunks(language=language)
        if language is not None:
            chosen = and_(chosen, Item.language == language)
        result = self._session.execute(
            update(Item)
            .where(chosen)
            .values(status="pending", next_attempt_at=None, updated_at=now, **cleared_lease())
            .execution_options(synchronize_session=False)
        )
        return int(result.rowcount)  # type: ignore[attr-defined]

    def _forget_silent_chunks(self, *, language: str | None) -> None:
        skipped = select(Item.id).where(Item.status == "skipped")
        if language is not None:
            skipped = skipped.where(Item.language == language)
        self._session.execute(
            delete(ChunkRow).where(ChunkRow.status == "silent", ChunkRow.item_id.in_(skipped))
        )


def _unreadable(uri: str, reason: str, *, now: datetime) -> dict[str, Any]:
    return {
        "source_version": UNREADABLE_VERSION,
        **ended_with_error(
            "failed",
            error_kind=SourceUnreadable.kind,
            message=f"cannot read {uri}: {reason}",
            retryable=False,
        ),
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


def _pending_again(
    item_id: int, listed: SourceFile, *, now: datetime, keep_receipt: bool = False
) -> dict[str, Any]:
    """Changed content: forget the old result (the sha256 stays until re-fingerprinted);
    `keep_receipt`: a purged item keeps its extras (the purge receipt)."""
    values = {
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
    if keep_receipt:
        del values["extras"]
    return values


def _relisted(item_id: int, f: SourceFile, *, now: datetime, same_size: Any) -> dict[str, Any]:
    """The new values of a changed file's row: one of its old size is touched (a purged
    one keeps its receipt and goes back to pending), any other is pending again."""
    if same_size is not None and same_size.status != ItemStatus.PURGED:
        return _touched(item_id, f, now=now, before=same_size)
    return _pending_again(item_id, f, now=now, keep_receipt=same_size is not None)


def _touched(item_id: int, listed: SourceFile, *, now: datetime, before: Any) -> dict[str, Any]:
    """A finished file listed again with its old size: back to pending to be hashed, its
    transcript, review and finish time kept, its status and audio duration noted under
    extras["touched"] (a pending row counts no audio hours)."""
    touched = {"status": before.status, "duration_ms": before.duration_ms}
    return {
        "id": item_id,
        "source_version": listed.version,
        "status": "pending",
        "attempts": 0,
        "next_attempt_at": None,
        "duration_ms": None,
        "extras": {**(before.extras or {}), "touched": touched},
        "updated_at": now,
        **cleared_lease(),
    }
