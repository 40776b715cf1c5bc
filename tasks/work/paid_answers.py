"""A chunk answer on its way to the store: journaled, then committed in a group.

After an HTTP 200 the text is paid for. Before it joins a group commit
(tasks/work/group_commit.py) the answer is written to the journal without an fsync (a
page-cache write, some tens of microseconds); the group writer deletes the entry once
its group has committed. What each failure costs:

* the process dies (crash, kill -9, OOM, a second Ctrl-C) between the answer and the
  commit: the entry is on disk; the next run records it before it sends anything.
  Nothing paid is lost, nothing is bought twice;
* the machine loses power in that window: entries not yet flushed by the kernel may be
  gone with the uncommitted group; those chunks are bought again by the next run (never
  recorded wrongly: the store only ever holds committed answers);
* the store stays down past `retry_s`: the entry is fsynced and kept, the file stops
  with StoreUnavailable and the next run records it (as before group commit).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from storage.errors import StoreUnavailable
from storage.interface import UnitOfWork
from storage.records import ChunkStatus
from tasks.work.group_commit import GroupWriter
from tasks.work.journal import Journal, PaidChunk, store_retries

logger = logging.getLogger("medasr.journal")


async def store_chunk_answer(
    writer: GroupWriter,
    answer: PaidChunk,
    *,
    lease_token: str | None,
    silent: bool,
    journal: Journal,
    retry_s: float,
    alongside: Callable[[UnitOfWork], Any] | None = None,
) -> asyncio.Future[Any] | None:
    """Record one chunk's answer under our claim in the next group commit.

    A paid answer is journaled first and its store write retried while the store is
    busy or unreachable, for `retry_s`; then it stays in the journal (fsynced) and
    StoreUnavailable is raised. A silent chunk was never sent (nothing paid): no journal.
    LeaseLost and StoreFailed are raised at once.

    `alongside` (the file's end, when this is its last answer) is submitted right after
    the answer's first attempt, so both share one commit; its own outcome is returned as
    a done future (None without one). It never holds the answer back: an `alongside` that
    fails leaves the answer committed, and later attempts carry the answer alone.
    """
    call = _chunk_write(answer, lease_token=lease_token, silent=silent)
    submit = _Submitter(writer, call, alongside=alongside)
    if silent:
        await submit(None)
        return submit.companion
    entry = _journal_quietly(journal, answer)
    try:
        async for attempt in store_retries(retry_s=retry_s):
            with attempt:
                await submit(entry)
    except StoreUnavailable as exc:
        await _kept_for_next_run(journal, answer, entry, exc)
    return submit.companion


async def _kept_for_next_run(
    journal: Journal, answer: PaidChunk, entry: Path | None, exc: StoreUnavailable
) -> NoReturn:
    """The store stayed down: the entry made durable, StoreUnavailable raised."""
    where = await asyncio.to_thread(_keep_for_next_run, journal, answer, entry)
    logger.error(
        "the store is unavailable; answer %s was kept in %s and will be recorded by the next run",
        answer.journal_name,
        where,
    )
    raise StoreUnavailable(f"{exc.message}; the paid answer was kept in the journal") from exc


class _Submitter:
    """Submits the answer's write to the group writer; `alongside` with the first attempt
    only, its future kept as `companion`."""

    def __init__(
        self,
        writer: GroupWriter,
        call: Callable[[UnitOfWork], None],
        *,
        alongside: Callable[[UnitOfWork], Any] | None,
    ) -> None:
        self._writer, self._call, self.alongside = writer, call, alongside
        self.companion: asyncio.Future[Any] | None = None

    def __call__(self, entry: Path | None) -> asyncio.Future[None]:
        written = self._writer.submit(self._call, entry=entry)
        if self.alongside is not None:
            self.companion, self.alongside = self._writer.submit(self.alongside), None
            self.companion.add_done_callback(_looked_at)  # the caller may never ask for it
        return written


def _looked_at(future: asyncio.Future[Any]) -> None:
    """Mark a failed future's error as seen (asyncio logs the unseen ones when collected)."""
    if not future.cancelled():
        future.exception()


def _chunk_write(
    answer: PaidChunk, *, lease_token: str | None, silent: bool
) -> Callable[[UnitOfWork], None]:
    def write(uow: UnitOfWork) -> None:
        uow.chunks.record_chunk_result(
            answer.item_id,
            lease_token=lease_token,
            index=answer.index,
            start_ms=answer.start_ms,
            end_ms=answer.end_ms,
            size_bytes=answer.size_bytes,
            text=answer.text,
            status=ChunkStatus.SILENT if silent else ChunkStatus.DONE,
            attempts=answer.attempts,
            txn_id=answer.txn_id,
            latency_ms=answer.latency_ms,
        )

    return write


def _journal_quietly(journal: Journal, answer: PaidChunk) -> Path | None:
    """The answer's journal entry (no fsync; on the event loop: one small page-cache
    write); None if the journal cannot take it now (the commit is then its only cover)."""
    try:
        return journal.keep(answer, durable=False)
    except OSError as exc:
        logger.warning(
            "answer %s could not be journaled before its commit: %s",
            answer.journal_name,
            exc.strerror or type(exc).__name__,
        )
        return None


def _keep_for_next_run(journal: Journal, answer: PaidChunk, entry: Path | None) -> Path:
    """The entry, made durable (written again if the first write failed). Raises OSError."""
    if entry is not None and entry.exists():
        journal.make_durable(entry)
        return entry
    return journal.keep(answer)


__all__ = ["store_chunk_answer"]
