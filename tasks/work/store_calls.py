"""Store calls from async code: each runs on a fresh repository in a worker thread.

A store call may wait (SQLite busy up to its timeout, a PostgreSQL round trip, a lock):
on the event loop that wait would stall every request in flight. Each call opens and
closes its own session in one thread, so no SQLite connection crosses threads while in
use (the pool hands it to the next thread only once it is returned).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

from storage.interface import UnitOfWork, UnitOfWorkFactory

T = TypeVar("T")


async def in_store(
    store: UnitOfWorkFactory, call: Callable[[UnitOfWork], T], *, read_only: bool = False
) -> T:
    """`call(uow)` in one transaction, in a worker thread; raises what the store raises."""

    def run() -> T:
        with store.unit_of_work(read_only=read_only) as uow:
            return call(uow)

    return await asyncio.to_thread(run)
