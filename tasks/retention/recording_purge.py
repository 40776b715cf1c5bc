"""`medasr purge`: page through the recordings a retention period takes and remove their
patient data, each page one transaction; one receipt for the whole purge.

Per page: the store removes the text (storage/retention.py says what goes and what
stays), a `purge_page` audit event is appended in the same transaction (its counts and
digest: a purge stopped half way leaves whole pages, each accounted for), then the
journal entries of those recordings are removed from disk. When the pages are through,
one `purged` event is the purge's receipt: counts by language and status, the oldest
and newest finish, the digest of the removed texts' hashes, never a name. Then the
store gives the freed space back (VACUUM). A dry run counts only. Memory stays flat:
one page of ids and hashes at a time.
"""

from __future__ import annotations

import hashlib
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from audit import AuditAction, record_event
from storage.interface import UnitOfWork, UnitOfWorkFactory
from storage.retention_records import KeptCount, PurgedItem, PurgeSelection
from tasks.retention.durations import Retention
from tasks.retention.journal_entries import remove_journal_entries
from tasks.retention.receipt_key import receipt_key

PAGE = 2_000


@dataclass(frozen=True)
class PurgeRequest:
    """What to purge: the period, a language, how strict, a dry run, and who asks."""

    retention: Retention
    actor: str
    language: str | None = None
    include_undelivered: bool = False
    delivery_configured: bool = False
    dry_run: bool = False


@dataclass
class PurgeResult:
    """What a purge did (or, dry, would do): counts, the span of finish times, a digest."""

    cutoff: datetime
    purged: Counter[tuple[str, str]] = field(default_factory=Counter)  # (language, status)
    kept: list[KeptCount] = field(default_factory=list)
    oldest: datetime | None = None
    newest: datetime | None = None
    journal_entries: int = 0
    receipts: int = 0
    reclaimed: str = ""
    digest: str = ""
    not_audio_names: int = 0  # names of files ignored as not audio, removed

    @property
    def total(self) -> int:
        """Recordings purged (or that a dry run would purge)."""
        return sum(self.purged.values())


def purge_recordings(
    store: UnitOfWorkFactory,
    request: PurgeRequest,
    *,
    journal_folder: Path,
    now: datetime | None = None,
    page: int = PAGE,
    key_folder: Path | None = None,
) -> PurgeResult:
    """Purge (or with `dry_run` count) what `request` takes; returns the result.
    `key_folder`: where the receipt key is (tasks/retention/receipt_key.py), the data
    dir (the journal's parent) by default. Raises StoreUnavailable or StoreFailed (pages
    already committed stay purged)."""
    cutoff = request.retention.cutoff(now or datetime.now(UTC))
    selection = _selection(request, cutoff=cutoff)
    result = PurgeResult(cutoff=cutoff)
    with store.unit_of_work(read_only=True) as uow:
        result.kept = uow.retention.kept_counts(selection)
    if request.dry_run:
        _count_dry(store, selection, result, page=page)
        return result
    key = receipt_key(key_folder or journal_folder.parent)
    run_id = uuid.uuid4().hex[:12]
    number = _purge_pages(
        store, request, selection, result, key=key, run_id=run_id, folder=journal_folder, page=page
    )
    if number:
        with store.unit_of_work() as uow:
            _record_receipt(uow, request, result, run_id=run_id, pages=number)
        result.receipts = 1
    with store.unit_of_work() as uow:  # file names can carry patients' names
        result.not_audio_names = uow.listings.forget_not_audio()
    if result.total or result.not_audio_names:
        result.reclaimed = store.reclaim_space()
    return result


def _selection(request: PurgeRequest, *, cutoff: datetime) -> PurgeSelection:
    """What the store takes: finished before `cutoff`, by the request's rules."""
    return PurgeSelection(
        finished_before=cutoff,
        language=request.language,
        include_undelivered=request.include_undelivered,
        delivery_configured=request.delivery_configured,
    )


def _purge_pages(
    store: UnitOfWorkFactory,
    request: PurgeRequest,
    selection: PurgeSelection,
    result: PurgeResult,
    *,
    key: bytes,
    run_id: str,
    folder: Path,
    page: int,
) -> int:
    """Purge a page per transaction (each with its audit event), the journal's entries of
    each after it; counts and the digest of every page into `result`; returns how many
    pages."""
    running, after_id, number = hashlib.sha256(), 0, 0
    while True:
        with store.unit_of_work() as uow:
            ids = uow.retention.purgeable_ids(selection, after_id=after_id, limit=page)
            if not ids:
                break
            purged = uow.retention.purge_items(ids, purged_by=request.actor, receipt_key=key)
            deliveries = uow.retention.delivery_ids_of(ids)
            number += 1
            _record_page(uow, request, purged, cutoff=result.cutoff, run_id=run_id, page=number)
        after_id = ids[-1]
        _account(result, purged, running)
        result.journal_entries += remove_journal_entries(
            folder, item_ids=ids, delivery_ids=deliveries
        )
    result.digest = running.hexdigest()
    return number


def _count_dry(
    store: UnitOfWorkFactory, selection: PurgeSelection, result: PurgeResult, *, page: int
) -> None:
    after_id = 0
    while True:
        with store.unit_of_work(read_only=True) as uow:
            ids = uow.retention.purgeable_ids(selection, after_id=after_id, limit=page)
        if not ids:
            return
        result.purged[("*", "*")] += len(ids)
        after_id = ids[-1]


def _account(result: PurgeResult, purged: list[PurgedItem], running: Any) -> None:
    for item in purged:
        result.purged[(item.language, item.status)] += 1
        result.oldest = min(filter(None, (result.oldest, item.finished_at)))
        result.newest = max(filter(None, (result.newest, item.finished_at)))
        running.update(item.digest.encode("ascii"))


def _record_page(
    uow: UnitOfWork,
    request: PurgeRequest,
    purged: list[PurgedItem],
    *,
    cutoff: datetime,
    run_id: str,
    page: int,
) -> None:
    """The page's event, committed with the page: counts, span, digest; no names."""
    counts = Counter((item.language, item.status) for item in purged)
    finished = [item.finished_at for item in purged]
    digest = hashlib.sha256("".join(item.digest for item in purged).encode("ascii")).hexdigest()
    detail = _detail(request, cutoff=cutoff, run_id=run_id, counts=counts, digest=digest)
    detail["page"] = page
    if finished:
        detail["oldest_finished"] = min(finished).isoformat(timespec="seconds")
        detail["newest_finished"] = max(finished).isoformat(timespec="seconds")
    record_event(
        uow, action=AuditAction.PURGE_PAGE, actor=request.actor, target="store", detail=detail
    )


def _record_receipt(
    uow: UnitOfWork, request: PurgeRequest, result: PurgeResult, *, run_id: str, pages: int
) -> None:
    """The whole purge's receipt: counts, span, the digest over every page; no names."""
    detail = _detail(
        request, cutoff=result.cutoff, run_id=run_id, counts=result.purged, digest=result.digest
    )
    detail["pages"] = pages
    if result.oldest is not None and result.newest is not None:
        detail["oldest_finished"] = result.oldest.isoformat(timespec="seconds")
        detail["newest_finished"] = result.newest.isoformat(timespec="seconds")
    record_event(uow, action=AuditAction.PURGED, actor=request.actor, target="store", detail=detail)


def _detail(
    request: PurgeRequest,
    *,
    cutoff: datetime,
    run_id: str,
    counts: Counter[tuple[str, str]],
    digest: str,
) -> dict[str, str | int]:
    detail: dict[str, str | int] = {
        "purge": run_id,
        "older_than": request.retention.text,
        "cutoff": cutoff.isoformat(timespec="seconds"),
        "language": request.language or "all",
        "include_undelivered": int(request.include_undelivered),
        "recordings": sum(counts.values()),
        "digest": digest,
    }
    detail.update({f"n.{language}.{status}": n for (language, status), n in sorted(counts.items())})
    return detail
