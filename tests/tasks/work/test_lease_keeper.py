"""The lease keeper on a real SQLite store: a claim that ends here is never "taken over".

A renewal asks the store about every held claim, in a thread; a file may be settled
while it is on its way. The store then no longer holds that claim, and the keeper must
not report it as lost to another worker. The renewal is paused at the store (a wrapper
around the real store that waits for the test's cue): a socket cannot provoke that
moment on cue.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from storage.errors import LeaseLost
from storage.interface import UnitOfWork, UnitOfWorkFactory
from storage.records import ItemRecord, SourceFile
from tasks.work.lease_keeper import LeaseKeeper

LANG = "en-IN"
SHA = "b" * 64
TAKEN_OVER = "taken over by another worker"


class _PausedRenewals:
    """The real store; once paused, each renewal waits in its thread until `answer` is set."""

    def __init__(self, store: UnitOfWorkFactory) -> None:
        self._store = store
        self.asked = threading.Event()
        self.answer = threading.Event()
        self.answer.set()  # the keeper's first renewal (`holding`) answers at once

    def pause(self) -> None:
        self.asked.clear()
        self.answer.clear()

    @contextmanager
    def unit_of_work(self, *, read_only: bool = False) -> Iterator[UnitOfWork]:
        with self._store.unit_of_work(read_only=read_only) as uow:
            self.asked.set()
            assert self.answer.wait(10), "the test never let the renewal answer"
            yield uow

    def dispose(self) -> None:
        self._store.dispose()


def _claimed(store: UnitOfWorkFactory, *, count: int) -> list[ItemRecord]:
    files = [SourceFile(f"/archive/{i}.wav", 10, "v1") for i in range(count)]
    with store.unit_of_work() as uow:
        uow.items.register_items(files, language=LANG)
        items = uow.claims.claim_batch(owner="w", language=LANG, limit=count, lease_s=60)
        for item in items:
            uow.claims.set_fingerprint(
                item.id, sha256=SHA, size_bytes=10, lease_token=item.lease_token
            )
    return items


def _finish(store: UnitOfWorkFactory, item: ItemRecord) -> None:
    with store.unit_of_work() as uow:
        uow.claims.finish_item(
            item.id,
            lease_token=item.lease_token,
            text="ok",
            duration_ms=1000,
            chunk_count=1,
            extras={},
        )


async def _renew_while(
    paused: _PausedRenewals, keeper: LeaseKeeper, meanwhile: Callable[[], None]
) -> None:
    """Start a renewal, run `meanwhile()` while the store holds its answer, then answer."""
    paused.pause()
    renewal = asyncio.create_task(keeper.renew_now())
    assert await asyncio.to_thread(paused.asked.wait, 10)
    meanwhile()
    paused.answer.set()
    await renewal


@pytest.mark.parametrize("let_go", [True, False], ids=["let-go", "still-settling"])
def test_a_file_settled_during_a_renewal_is_not_taken_over(
    store: UnitOfWorkFactory, caplog: pytest.LogCaptureFixture, let_go: bool
) -> None:
    settled, other = _claimed(store, count=2)
    paused = _PausedRenewals(store)
    keeper = LeaseKeeper(store=paused, lease_s=60)  # type: ignore[arg-type]

    def finish_it() -> None:
        _finish(store, settled)  # the file's own write commits...
        if let_go:
            keeper.let_go(settled)  # ...and the recorder lets it go at once

    async def go() -> None:
        async with keeper.holding([settled, other]):
            with keeper.settling(settled):
                await _renew_while(paused, keeper, finish_it)
                await keeper.require(other)
                await keeper.require(settled)  # settled here: nothing to refuse
        await keeper.aclose()

    with caplog.at_level(logging.WARNING, logger="medasr.leases"):
        asyncio.run(go())
    assert TAKEN_OVER not in caplog.text


def test_a_claim_released_by_someone_else_is_still_reported(
    store: UnitOfWorkFactory, caplog: pytest.LogCaptureFixture
) -> None:
    mine, taken = _claimed(store, count=2)
    paused = _PausedRenewals(store)
    keeper = LeaseKeeper(store=paused, lease_s=60)  # type: ignore[arg-type]

    def give_back() -> None:
        with store.unit_of_work() as uow:
            uow.claims.release_items([taken.lease_token or ""])

    async def go() -> None:
        async with keeper.holding([mine, taken]):
            await _renew_while(paused, keeper, give_back)
            await keeper.require(mine)
            with pytest.raises(LeaseLost):
                await keeper.require(taken)
        await keeper.aclose()

    with caplog.at_level(logging.WARNING, logger="medasr.leases"):
        asyncio.run(go())
    assert "1 files were taken over by another worker" in caplog.text
