"""Everything the pipeline asks of the SQL store: register, claim under a lease, record, query.

A Repository wraps one session (one transaction); `Store.repository()` commits it.
Claiming lives in storage/claims.py, reading in storage/queries.py; this module writes:
registering listings, fingerprints, chunk results, an item's end, runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import delete, or_, select, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from storage.claims import Claims, cleared_lease, new_lease_owner
from storage.deliveries import DeliveryQueries
from storage.errors import LeaseLost, SourceUnreadable
from storage.leases import held_under, store_now
from storage.models import RUN_COUNT_COLUMNS, ChunkRow, Item, Run
from storage.queries import ITEMS, batches, utc_now
from storage.records import (
    ChunkRecord,
    ExportRow,
    ItemRecord,
    RegisterResult,
    RunRecord,
    SkippedFile,
    SourceFile,
    StatusCount,
)
from storage.registration import Differing, find_differing, find_unsettled, insert_new
from storage.reviews import Reviews

__all__ = [
    "ChunkRecord",
    "ExportRow",
    "ItemRecord",
    "RegisterResult",
    "Repository",
    "RunRecord",
    "StatusCount",
    "new_lease_owner",
    "utc_now",
]

_MESSAGE_MAX_CHARS = 4000
# The version an unreadable file is recorded with: any real listing differs, so the file
# goes back to pending as soon as it can be read.
UNREADABLE_VERSION = "unreadable"
# ... and a folder or bucket prefix that could not be listed: its row goes once it is.
UNLISTED_FOLDER_VERSION = "unlisted folder"
# Listed files compared and inserted per statement (one JSON parameter: no IN-list limit).
REGISTER_BATCH = 2000


class Repository(Reviews, Claims, DeliveryQueries):
    """Queries and updates of items, chunks and runs inside one session."""

    def register_items(self, files: Sequence[SourceFile], *, language: str) -> RegisterResult:
        """Upsert listed files: new -> pending; changed -> back to pending.

        A file is changed when its version (mtime or ETag) or its size differs. An item
        being processed under a live lease keeps its old version, so the next listing
        sees the change again once that worker is done; under an expired lease it goes
        back to pending with the new version (its late worker then gets LeaseLost).
        The old sha256 and chunks stay until re-fingerprinted.
        """
        by_uri = {f.uri: f for f in files}
        new = changed = unchanged = 0
        now = store_now(self._session)  # leases lapse on the store's clock
        for batch in batches(list(by_uri.values()), REGISTER_BATCH):
            differing = find_differing(self._session, batch, language=language)
            unchanged += len(batch) - len(differing)
            inserts, updates = [], []
            for row in differing:
                listed = by_uri[row.source_uri]
                if row.id is None:
                    inserts.append(listed)
                    continue
                changed += 1
                if not _leased(row, now=now):
                    updates.append(_back_to_pending(row.id, listed, now=now))
            if inserts:
                ours = insert_new(self._session, inserts, language=language, now=now)
                new, unchanged = new + ours, unchanged + len(inserts) - ours
            if updates:
                self._session.execute(update(Item), updates)
        return RegisterResult(new=new, changed=changed, unchanged=unchanged)

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
        now, recorded = utc_now(), 0
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
        row = self._session.execute(
            select(Item.sha256).where(Item.id == item_id, held_under(lease_token)).with_for_update()
        ).one_or_none()
        if row is None:
            raise LeaseLost(f"item {item_id} is no longer held by this worker")
        if row.sha256 is not None and row.sha256 != sha256:
            self.reset_chunks(item_id)
        self._session.execute(
            update(Item)
            .where(Item.id == item_id)
            .values(sha256=sha256, size_bytes=size_bytes, updated_at=utc_now())
            .execution_options(synchronize_session=False)
        )

    def reset_chunks(self, item_id: int) -> None:
        """Forget an item's chunks (its content changed)."""
        self._session.execute(delete(ChunkRow).where(ChunkRow.item_id == item_id))

    def record_chunk_result(
        self,
        item_id: int,
        *,
        lease_token: str | None,
        index: int,
        start_ms: int,
        end_ms: int,
        size_bytes: int,
        text: str,
        status: str = "done",
        attempts: int = 1,
        txn_id: str | None = None,
        latency_ms: float | None = None,
    ) -> None:
        """Insert or replace one chunk's result while our claim holds the item; else LeaseLost.

        The item row is locked first, so a new owner's set_fingerprint (which drops the
        chunks of changed content) cannot interleave with this write. Commit right
        after: one chunk, one transaction.
        """
        self._require_held(item_id, lease_token=lease_token)
        self._upsert_chunk(
            {
                "item_id": item_id,
                "index": index,
                "start_ms": start_ms,
                "end_ms": end_ms,
                "size_bytes": size_bytes,
                "status": status,
                "text": text,
                "attempts": attempts,
                "txn_id": txn_id,
                "latency_ms": latency_ms,
            }
        )

    def record_recovered_chunk(
        self, item_id: int, *, source_uri: str, sha256: str | None, **chunk: Any
    ) -> bool:
        """Record a paid answer kept in the journal (no lease: its worker is gone).

        Only while the item is the same source with the same content and not yet done;
        returns False (nothing written) otherwise. `chunk` holds index, start_ms, end_ms,
        size_bytes, text, attempts, txn_id and latency_ms.
        """
        row = self._session.execute(
            select(Item.source_uri, Item.sha256, Item.status)
            .where(Item.id == item_id)
            .with_for_update()
        ).one_or_none()
        if row is None or row.status == "done" or sha256 is None:
            return False
        if (row.source_uri, row.sha256) != (source_uri, sha256):
            return False
        self._upsert_chunk({"item_id": item_id, "status": "done", **chunk})
        return True

    def _upsert_chunk(self, values: dict[str, Any]) -> None:
        values = {**values, "updated_at": utc_now()}
        dialect = self._session.get_bind().dialect.name
        upsert = (postgresql_insert if dialect == "postgresql" else sqlite_insert)(ChunkRow)
        statement = upsert.values(values).on_conflict_do_update(
            index_elements=["item_id", "index"],
            set_={k: upsert.excluded[k] for k in values if k not in ("item_id", "index")},
        )
        self._session.execute(statement)

    def _require_held(self, item_id: int, *, lease_token: str | None) -> None:
        """Lock the item's row if our claim (`lease_token`) holds it; raise LeaseLost otherwise."""
        held = self._session.scalar(
            select(Item.id).where(Item.id == item_id, held_under(lease_token)).with_for_update()
        )
        if held is None:
            raise LeaseLost(f"item {item_id} is no longer held by this worker")

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
    ) -> None:
        """Mark our item done with its transcript, or needs_review when the quality gate
        flagged it; raises LeaseLost if it is no longer ours."""
        now = utc_now()
        self._settle(
            item_id,
            lease_token=lease_token,
            status="needs_review" if flags else "done",
            flags=list(flags) or None,
            text=text,
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
            done_at=utc_now(),
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
        result = self._session.execute(
            update(Item)
            .where(Item.id == item_id, held_under(lease_token))
            .values(updated_at=utc_now(), **cleared_lease(), **values)
            .execution_options(synchronize_session=False)
        )
        if result.rowcount != 1:  # type: ignore[attr-defined]
            raise LeaseLost(f"item {item_id} is no longer held by this worker")

    def start_run(self, *, source: str, language: str) -> int:
        """Record the start of a run; returns its id."""
        run = Run(source=source, language=language, status="running", started_at=utc_now())
        self._session.add(run)
        self._session.flush()
        return run.id

    def finish_run(self, run_id: int, *, counts: Mapping[str, int], status: str) -> None:
        """Record a run's end, status and counts (unknown count names kept aside)."""
        known = {k: int(v) for k, v in counts.items() if k in RUN_COUNT_COLUMNS}
        other = {k: int(v) for k, v in counts.items() if k not in RUN_COUNT_COLUMNS}
        self._session.execute(
            update(Run)
            .where(Run.id == run_id)
            .values(status=status, finished_at=utc_now(), other_counts=other or None, **known)
            .execution_options(synchronize_session=False)
        )


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


def _leased(row: Differing, *, now: datetime) -> bool:
    """A worker holds the item under a lease that has not expired."""
    expires = row.lease_expires_at
    return bool(row.status == "processing" and expires is not None and expires > now)


def _back_to_pending(item_id: int, listed: SourceFile, *, now: datetime) -> dict[str, Any]:
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
