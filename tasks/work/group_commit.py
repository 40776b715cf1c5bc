"""Group commit: the file writes of a run share transactions, one commit for many calls.

A commit is the dear part of a store write (SQLite in WAL with synchronous FULL: an
fsync under the one write lock; PostgreSQL: a round trip and a WAL flush). A
run's file writes (chunk answers, content settles, finishes, skips, fails, releases,
and the lease renewal of those files) queue to one `GroupWriter`; its one drain task
takes everything queued (at most `max_calls`), runs the calls in one transaction in a
worker thread, commits once and then resolves each caller. A call's own error (LeaseLost,
StoreFailed, a bug) is raised to its caller alone and none of its writes stand; its
neighbours commit. That is bought optimistically: the calls run without a SAVEPOINT each
(a savepoint and its release cost more than most calls), and only when one of them
raises is the whole transaction rolled back and the group run again in a new one, each
call in a SAVEPOINT of its own (every call is a pure store write through its `uow`:
running it twice writes the same rows). StoreUnavailable inside a call, or a failed
commit, fails the whole group: every caller sees it and retries as before. No call
waits for a timer: the next group forms while the current one commits, so a quiet run
commits each call on its own, a busy one in groups.

A paid chunk answer is journaled (without fsync) before it joins a group, and its entry
is removed once its group has committed: a process that dies in between leaves the
entry, which the next run records before it sends anything (tasks/work/journal.py).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from storage.errors import StoreUnavailable
from storage.interface import UnitOfWork, UnitOfWorkFactory

T = TypeVar("T")

# Calls per transaction at most: enough to share a commit among every file in flight,
# few enough that one group holds SQLite's write lock for milliseconds, not seconds.
MAX_CALLS_PER_GROUP = 64
# How long a group waits for more calls before its transaction: long enough for the
# writes of the files in flight to meet, short beside a request (250 ms and more).
GROUP_WINDOW_S = 0.02


@dataclass
class _Queued:
    """One call waiting for its group, with the journal entry its commit retires."""

    call: Callable[[UnitOfWork], Any]
    future: asyncio.Future[Any]
    entry: Path | None = None
    outcome: tuple[bool, Any] = field(default=(False, None))  # (ok, result or error)


class GroupWriter:
    """The one writer of a run's file writes: queued calls commit in groups."""

    def __init__(
        self,
        store: UnitOfWorkFactory,
        *,
        max_calls: int = MAX_CALLS_PER_GROUP,
        window_s: float = GROUP_WINDOW_S,
    ) -> None:
        self._store = store
        self._max_calls = max_calls
        self._window_s = window_s
        self._queue: list[_Queued] = []
        self._task: asyncio.Task[None] | None = None
        self.groups = 0  # groups committed or tried (for tests and benchmarks)
        self.calls = 0
        self.reruns = 0  # groups run again call by call, in savepoints, after a call raised

    async def write(self, call: Callable[[UnitOfWork], T], *, entry: Path | None = None) -> T:
        """`call(uow)` in the next group's transaction; its result.

        `entry` is a journal file to delete once the call is committed (or refused on its
        own). Raises what the call raises, or StoreUnavailable/StoreFailed for the group.
        """
        result: T = await self.submit(call, entry=entry)
        return result

    def submit(
        self, call: Callable[[UnitOfWork], T], *, entry: Path | None = None
    ) -> asyncio.Future[T]:
        """Queue `call` now; the future of its outcome (as `write`'s). Calls submitted
        one after another, with no await between, share a group (one commit)."""
        loop = asyncio.get_running_loop()
        queued = _Queued(call=call, future=loop.create_future(), entry=entry)
        self._queue.append(queued)
        if self._task is None or self._task.done():
            self._task = loop.create_task(self._drain(), name="medasr-group-commit")
        return queued.future

    async def _drain(self) -> None:
        while self._queue:
            group: list[_Queued] = []
            try:
                if self._window_s and len(self._queue) < self._max_calls:
                    await asyncio.sleep(self._window_s)  # company for the transaction
                group = self._queue[: self._max_calls]
                del self._queue[: self._max_calls]
                await asyncio.to_thread(self._commit_group, group)
            except BaseException as exc:  # the group failed as a whole (or we are cancelled)
                _fail_all(group, exc)
                if not isinstance(exc, Exception):
                    _fail_all(self._queue, exc)
                    self._queue.clear()
                    raise
            else:
                _resolve_all(group)

    def _commit_group(self, group: list[_Queued]) -> None:
        """One transaction for the group (in a worker thread); raises for the whole group."""
        self.groups += 1
        self.calls += len(group)
        try:
            with self._store.unit_of_work() as uow:
                for queued in group:
                    queued.outcome = _run_plainly(uow, queued.call)
        except _CallRaised:  # rolled back whole: again, each call in a savepoint of its own
            self.reruns += 1
            with self._store.unit_of_work() as uow:
                for queued in group:
                    queued.outcome = _run_in_savepoint(uow, queued.call)
        for queued in group:  # committed (or refused on its own): the journal has done its job
            if queued.entry is not None:
                with contextlib.suppress(FileNotFoundError):  # a replay took it meanwhile
                    queued.entry.unlink()


class _CallRaised(Exception):
    """A call of an optimistic group raised: roll the transaction back, run it call by call."""


def _run_plainly(uow: UnitOfWork, call: Callable[[UnitOfWork], Any]) -> tuple[bool, Any]:
    """(True, result); raises _CallRaised if the call raised (StoreUnavailable as it is)."""
    try:
        return True, call(uow)
    except StoreUnavailable:
        raise
    except Exception as exc:  # its writes may stand in the transaction: undo them all
        raise _CallRaised from exc


def _run_in_savepoint(uow: UnitOfWork, call: Callable[[UnitOfWork], Any]) -> tuple[bool, Any]:
    """(True, result), or (False, error) with the call's writes rolled back.

    StoreUnavailable is raised: the connection or the transaction may be gone.
    """
    try:
        with uow.savepoint():
            return True, call(uow)
    except StoreUnavailable:
        raise
    except Exception as exc:  # the caller's error, raised to the caller alone
        return False, exc


def _resolve_all(group: list[_Queued]) -> None:
    for queued in group:
        if queued.future.done():
            continue  # the caller was cancelled; its write stands (as an awaited thread's)
        ok, value = queued.outcome
        if ok:
            queued.future.set_result(value)
        else:
            queued.future.set_exception(value)


def _fail_all(group: list[_Queued], exc: BaseException) -> None:
    for queued in group:
        if not queued.future.done():
            if isinstance(exc, Exception):
                queued.future.set_exception(exc)
            else:
                queued.future.cancel()


__all__ = ["GROUP_WINDOW_S", "MAX_CALLS_PER_GROUP", "GroupWriter"]
