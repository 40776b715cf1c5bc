"""The group commit's window, on a real store (SQLite and PostgreSQL): writes that come
a few milliseconds apart, as a night's answers do, share one transaction; a writer
stopped inside its window leaves no caller waiting and writes nothing."""

from __future__ import annotations

import asyncio

import pytest

from storage.interface import UnitOfWorkFactory
from tasks.work.group_commit import GROUP_WINDOW_S, GroupWriter
from tests.helpers.claims import claimed
from tests.helpers.stores import store_on_both_backends  # noqa: F401 (the `store` fixture)
from tests.tasks.work.test_group_commit import finish, status_of


def test_writes_a_few_milliseconds_apart_share_one_transaction(
    store: UnitOfWorkFactory,
) -> None:
    first, second, third = claimed(store, count=3)
    writer = GroupWriter(store)
    apart_s = GROUP_WINDOW_S / 4

    async def go() -> None:
        writes = [asyncio.ensure_future(writer.write(finish(first)))]  # type: ignore[arg-type]
        for item in (second, third):
            await asyncio.sleep(apart_s)  # the next answer arrives while the first waits
            writes.append(asyncio.ensure_future(writer.write(finish(item))))  # type: ignore[arg-type]
        await asyncio.gather(*writes)

    asyncio.run(go())

    assert (writer.groups, writer.calls) == (1, 3)
    assert [status_of(store, item) for item in (first, second, third)] == ["done"] * 3


def test_a_writer_without_a_window_commits_each_lone_call_at_once(
    store: UnitOfWorkFactory,
) -> None:
    first, second = claimed(store, count=2)
    writer = GroupWriter(store, window_s=0)

    async def go() -> None:
        await writer.write(finish(first))  # type: ignore[arg-type]
        await writer.write(finish(second))  # type: ignore[arg-type]

    asyncio.run(go())

    assert (writer.groups, writer.calls) == (2, 2)


def test_a_writer_cancelled_in_its_window_fails_its_callers_and_writes_nothing(
    store: UnitOfWorkFactory,
) -> None:
    waiting, queued_later = claimed(store, count=2)
    writer = GroupWriter(store, window_s=60.0)  # the run is stopped long before it ends

    async def go() -> tuple[BaseException | None, BaseException | None]:
        first = writer.submit(finish(waiting))  # type: ignore[arg-type]
        await asyncio.sleep(0)  # the drain task starts its window
        second = writer.submit(finish(queued_later))  # type: ignore[arg-type]
        drain = writer._task
        assert drain is not None
        drain.cancel()
        with pytest.raises(asyncio.CancelledError):
            await drain
        await asyncio.sleep(0)
        return _error_of(first), _error_of(second)

    errors = asyncio.run(asyncio.wait_for(go(), timeout=30))

    assert all(isinstance(error, asyncio.CancelledError) for error in errors)
    assert writer.groups == 0
    assert [status_of(store, item) for item in (waiting, queued_later)] == ["processing"] * 2


def _error_of(future: asyncio.Future[object]) -> BaseException | None:
    """What a caller awaiting `future` would get raised (None: a result)."""
    assert future.done(), "a caller is left waiting on a writer that stopped"
    if future.cancelled():
        return asyncio.CancelledError()
    return future.exception()
