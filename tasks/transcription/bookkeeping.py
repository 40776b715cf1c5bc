"""Run bookkeeping in the store: the run row, what a drain expects to do, re-queuing failures.

Plain functions over the repository; tasks/steps.py wraps them as Prefect tasks.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from audit import AuditAction, command_actor, record_event
from storage.errors import StoreError
from storage.interface import UnitOfWorkFactory
from storage.query_plans import refresh_statistics
from storage.records import ItemRecord, ItemStatus
from storage.scratch import remove_dead_leftovers

logger = logging.getLogger("medasr.runs")


def start_run(store: UnitOfWorkFactory, *, source: str, language: str) -> int:
    """Record that a run starts over `source` (normalized) in `language`; returns its id."""
    with store.unit_of_work() as uow:
        return uow.runs.start_run(source=source, language=language)


def finish_run(
    store: UnitOfWorkFactory, run_id: int, *, counts: Mapping[str, int], status: str
) -> None:
    """Record a run's end: its status and counts (numbers only: no text, no secret)."""
    with store.unit_of_work() as uow:
        uow.runs.finish_run(run_id, counts=counts, status=status)
    try:  # statistics for the next run's planner; the run itself is recorded already
        refresh_statistics(store)
    except StoreError as exc:
        logger.warning("could not refresh the store's statistics: %s", exc)


def expected_files(
    store: UnitOfWorkFactory, *, language: str | None, source_prefix: str | None, limit: int | None
) -> int:
    """Take back items (and remove temp folders) of dead local runs; how many files a
    drain expects to do.

    Counts pending items of `language` under `source_prefix` (a normalized source), so
    a run over one folder does not count another folder's backlog.
    """
    with store.unit_of_work() as uow:
        # A run killed on this machine left its items leased: take them back now.
        reclaimed = uow.claims.release_dead_local_leases()
        pending = uow.item_queries.pending_count(language=language, source_prefix=source_prefix)
    if reclaimed:
        logger.warning("took back %d items left in progress by an ended run", reclaimed)
    # ... and maybe patient audio in the temp directory: delete it.
    if swept := remove_dead_leftovers():
        logger.warning("removed %d temp folders left by ended runs", swept)
    return min(pending, limit) if limit is not None else pending


def known_sources(store: UnitOfWorkFactory) -> tuple[str, ...]:
    """The sources of recorded runs: a rerun names each file relative to its own."""
    with store.unit_of_work(read_only=True) as uow:
        return tuple(uow.runs.run_sources())


def requeue_failed(
    store: UnitOfWorkFactory,
    *,
    language: str | None,
    max_attempts: int,
    include_permanent: bool,
    include_skipped: bool = False,
) -> int:
    """Send failures back to pending; returns how many.

    Without `include_permanent`: retryable failures whose attempts are under
    `max_attempts` and whose next-attempt time has come. With it: every failed item of
    the language (permanent ones, and retryable ones past the attempts limit too).
    `include_skipped` adds every skipped (silent) item of the language.
    """
    with store.unit_of_work() as uow:
        count = uow.items.requeue_failures(
            language=language,
            max_attempts=max_attempts,
            include_permanent=include_permanent,
            include_skipped=include_skipped,
        )
        if count:  # audio goes to the service again: one event for the command, not per file
            record_event(
                uow,
                action=AuditAction.REQUEUED,
                actor=command_actor(),
                target=language or "all",
                detail={
                    "recordings": count,
                    "include_permanent": int(include_permanent),
                    "include_skipped": int(include_skipped),
                },
            )
        return count


# What stays open in the store until a person or a rerun resolves it.
OPEN_STATUSES = (ItemStatus.FAILED, ItemStatus.NEEDS_REVIEW, ItemStatus.SKIPPED)


def open_backlog(
    store: UnitOfWorkFactory, *, language: str | None, source_prefix: str | None, limit: int
) -> tuple[list[ItemRecord], int]:
    """The latest failed, held and skipped items (of `language`, under `source_prefix`),
    at most `limit` of each status, and how many there are in all (of the language).

    The records carry transcript text for held items: callers show names and reasons only.
    """
    with store.unit_of_work(read_only=True) as uow:
        total = sum(
            count.items
            for count in uow.item_queries.status_counts()
            if count.status in OPEN_STATUSES and language in (None, count.language)
        )
        found: list[ItemRecord] = []
        for status in OPEN_STATUSES:
            # Other languages and sources share these lists: read more, keep ours.
            latest = uow.item_queries.list_latest(status=status, limit=limit * 4)
            found += [
                item for item in latest if _ours(item, language=language, prefix=source_prefix)
            ][:limit]
    return found, total


def _ours(item: ItemRecord, *, language: str | None, prefix: str | None) -> bool:
    if language is not None and item.language != language:
        return False
    if prefix is None:
        return True
    return item.source_uri == prefix or item.source_uri.startswith(prefix.rstrip("/") + "/")
