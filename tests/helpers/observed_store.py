"""The SQL store with the two things a test of tasks/ needs beyond it: an outage and a count.

`down = True` makes every unit of work raise StoreUnavailable before it begins, as when
the database cannot be reached (the journal's case); `transactions` counts the units of
work opened, failed ones included. Everything else is the real store's.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from storage.errors import StoreUnavailable
from storage.interface import UnitOfWork, UnitOfWorkFactory


class ObservedStore:
    """A UnitOfWorkFactory around `store` that can be taken down and counts its units of work."""

    def __init__(self, store: UnitOfWorkFactory) -> None:
        self.down = False
        self.transactions = 0
        self._store = store
        self._count = threading.Lock()  # units of work open from several threads at once

    @contextmanager
    def unit_of_work(self, *, read_only: bool = False) -> Iterator[UnitOfWork]:
        with self._count:
            self.transactions += 1
        if self.down:
            raise StoreUnavailable("database unavailable: the store is down (test)")
        with self._store.unit_of_work(read_only=read_only) as uow:
            yield uow

    def reclaim_space(self) -> str:
        return self._store.reclaim_space()

    def dispose(self) -> None:
        """The real store is closed by its fixture."""
