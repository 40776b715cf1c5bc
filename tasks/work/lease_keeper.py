"""Renew, on a timer, the lease of every claim this process holds: one store call per tick.

Any work of the one work queue (storage/work_queue.py): transcription items by default,
deliveries with `renew=renew_deliveries`.

A file's lease must not lapse while it waits for a file slot, a request slot, the rate
cap or a long Retry-After, so renewal does not wait for a chunk to finish: every third
of the lease, one UPDATE renews all held claims at once (in a thread: no store I/O on
the event loop). A claim the store no longer knows is lost: nothing more may be sent
for it. While a renewal cannot be confirmed (store down) and the last confirmed one is
older than most of the lease, sending waits; it never goes ahead on a lease that may
have lapsed. A claim that ends while a renewal is on its way (the file was settled or
released, or is being settled) is not lost: the renewal's answer is read only for the
claims still held and not being settled. With a GroupWriter (a run's file writes), the
renewal is one call of a group like any write of the files: on PostgreSQL a renewal in a
transaction of its own could lock held rows in one order while a group locks them in
another (a deadlock, one side aborted).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Protocol

from storage.errors import LeaseLost, StoreError
from storage.interface import UnitOfWork, UnitOfWorkFactory
from tasks.work.group_commit import GroupWriter

logger = logging.getLogger("medasr.leases")

# Share of the lease after the last confirmed renewal within which sending goes ahead.
_SAFE_SHARE = 0.8


class Held(Protocol):
    """A claimed row: an item or a delivery."""

    @property
    def id(self) -> int: ...

    @property
    def lease_token(self) -> str | None: ...


Renew = Callable[[UnitOfWork, list[str], float], frozenset[str]]


def renew_items(uow: UnitOfWork, tokens: list[str], lease_s: float) -> frozenset[str]:
    """Renew transcription claims; returns the tokens lost."""
    return uow.claims.renew_leases(tokens, lease_s=lease_s)


def renew_deliveries(uow: UnitOfWork, tokens: list[str], lease_s: float) -> frozenset[str]:
    """Renew delivery claims; returns the tokens lost."""
    return uow.delivery_claims.renew_deliveries(tokens, lease_s=lease_s)


class LeaseKeeper:
    """The claims this process holds, kept alive by one background task."""

    def __init__(
        self,
        *,
        store: UnitOfWorkFactory,
        lease_s: float,
        renew: Renew = renew_items,
        writer: GroupWriter | None = None,
    ) -> None:
        self._store = store
        self._writer = writer
        self._renew_call = renew
        self._lease_s = lease_s
        self._tick_s = lease_s / 3
        self._confirmed: dict[str, float] = {}  # lease token -> monotonic s known good
        self._lost: set[str] = set()
        self._settling: set[str] = set()  # tokens whose claim our own write is ending
        self._renewed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @asynccontextmanager
    async def holding(self, items: Sequence[Held]) -> AsyncIterator[None]:
        """Keep these claims renewed until the block ends (or `let_go` is called).

        Renews them once at once: a claim may be older than it looks (it waited for a
        batch slot, or was made with a shorter lease), and only the store can say.
        """
        for item in items:
            if item.lease_token is not None:
                self._confirmed[item.lease_token] = -math.inf  # unconfirmed until renewed
        try:
            await self.renew_now()
            if self._task is None or self._task.done():
                self._task = asyncio.create_task(self._renew_until_empty(), name="medasr-leases")
            yield
        finally:
            for item in items:
                self.let_go(item)

    def let_go(self, item: Held) -> None:
        """Stop renewing this claim (the file is settled, released or lost)."""
        if item.lease_token is not None:
            self._confirmed.pop(item.lease_token, None)
            self._lost.discard(item.lease_token)

    @contextmanager
    def settling(self, item: Held) -> Iterator[None]:
        """Around a write that may end this claim (done, skipped, failed, released): a
        renewal that finds the claim gone meanwhile is not told it was taken over (the
        write itself raises LeaseLost if it was)."""
        token = item.lease_token
        if token is None:
            yield
            return
        self._settling.add(token)
        try:
            yield
        finally:
            self._settling.discard(token)

    async def require(self, item: Held) -> None:
        """Return while the claim is safely ours; wait while unconfirmed; raise LeaseLost.

        Waits at most one lease for a confirming renewal, then gives up with LeaseLost.
        """
        token = item.lease_token
        if token is None or (token not in self._confirmed and token not in self._lost):
            return  # not kept here (claimed outside a batch): the store's checks decide
        deadline = time.monotonic() + self._lease_s
        while True:
            if token in self._lost:
                raise LeaseLost(f"item {item.id} was taken over; nothing more is sent for it")
            confirmed = self._confirmed.get(token)
            if confirmed is None:
                return  # let go meanwhile: the file is settled
            if time.monotonic() - confirmed < self._lease_s * _SAFE_SHARE:
                return
            if time.monotonic() > deadline:
                raise LeaseLost(f"the lease on item {item.id} could not be renewed in time")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._renewed.wait(), timeout=self._tick_s)

    async def aclose(self) -> None:
        """Stop the renewal task."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _renew_until_empty(self) -> None:
        while self._confirmed:
            await asyncio.sleep(self._tick_s)
            await self.renew_now()

    async def renew_now(self) -> None:
        """One renewal of every held claim; marks the lost ones. Logs, never raises StoreError."""
        tokens = list(self._confirmed)
        if not tokens:
            return
        asked = time.monotonic()
        try:
            if self._writer is not None:
                lost = await self._writer.write(
                    lambda uow: self._renew_call(uow, tokens, self._lease_s)
                )
            else:
                lost = await asyncio.to_thread(self._renew, tokens)
        except StoreError as exc:
            logger.warning("could not renew the leases of %d files: %s", len(tokens), exc)
            return
        taken = self._mark_lost(lost, asked_s=asked, tokens=tokens)
        if taken:
            logger.warning("%d files were taken over by another worker; stopping them", taken)
        self._renewed.set()
        self._renewed = asyncio.Event()

    def _mark_lost(self, lost: frozenset[str], *, asked_s: float, tokens: list[str]) -> int:
        """Apply a renewal's answer to the claims still held; returns how many were lost.

        A claim let go or being settled since the renewal was asked ended here, not
        elsewhere: its absence from the store is no takeover.
        """
        taken = 0
        for token in tokens:
            if token not in self._confirmed:
                continue  # let go while the store answered: settled or released here
            if token in lost:
                if token in self._settling:
                    continue  # our own write ends it; that write sees a real takeover
                self._lost.add(token)
                self._confirmed.pop(token, None)
                taken += 1
            else:
                self._confirmed[token] = asked_s
        return taken

    def _renew(self, tokens: list[str]) -> frozenset[str]:
        with self._store.unit_of_work() as uow:
            return self._renew_call(uow, tokens, self._lease_s)
