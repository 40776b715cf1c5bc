"""The gate every request passes: bounded concurrency, an optional rate cap, a stop switch.

A call to the service holds one slot (`slot()`) for all its attempts, retries and
backoff waits included (MEDASR_CONCURRENCY: the ceiling). Each HTTP attempt, the first
and every retry, holds a place of the adaptive window below that ceiling and, with
MEDASR_GLOBAL_CONCURRENCY, a slot of the limit shared by every worker (`attempt()`), and
inside it waits for the rate cap (`pace()`; shared too with the global limit). Once the
gate is stopped (credentials rejected, a setting that fails every request such as a
certificate that does not verify, or the operator's Ctrl-C) no attempt starts any more,
not even the retry of a call already in flight.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from aiolimiter import AsyncLimiter

# What stops a whole run (RunStop: credentials, a setting, the operator) lives in
# config/errors.py; RUN_STOP_ERRORS is re-exported for tasks/transcription/file_run.py.
from config.errors import RUN_STOP_ERRORS as RUN_STOP_ERRORS
from config.errors import RunInterrupted, RunStop
from tasks.throttle.limiter import AdaptiveLimiter

if TYPE_CHECKING:  # Prefect's client is imported only by a run that has a shared limit
    from tasks.throttle.global_limit import SharedLimit

# Set by the CLI's signal handler; every gate of the process, present or future, reads it.
_interrupted: RunInterrupted | None = None


def interrupt_all_gates() -> None:
    """Stop every request gate of this process, and every later one, with RunInterrupted."""
    global _interrupted  # the process-wide switch a signal handler flips
    if _interrupted is None:
        _interrupted = RunInterrupted("interrupted by the operator")


def operator_interrupted() -> RunInterrupted | None:
    """The operator's interruption (Ctrl-C, SIGTERM) if it came, else None."""
    return _interrupted


class RequestGate:
    """Admits at most `concurrency` calls at once and `requests_per_s` attempts per second.

    Once stopped (a RunStop error, by `stop()` or by `interrupt_all_gates()`), nobody else
    is admitted: requests already on the wire finish, and every later `slot()` or `pace()`
    raises the stored error.
    """

    def __init__(
        self,
        *,
        concurrency: int,
        requests_per_s: float | None = None,
        shared: SharedLimit | None = None,
        longest_pause_s: float | None = None,
    ) -> None:
        self._slots = asyncio.Semaphore(concurrency)
        # A Retry-After past what one request may take is not waited out (limiter.py).
        self.window = AdaptiveLimiter(ceiling=concurrency, longest_pause_s=longest_pause_s)
        self._shared = shared
        local_rate = requests_per_s if shared is None else None  # else the shared one paces
        self._limiter = _limiter_for(local_rate) if local_rate else None
        self._stopped: RunStop | None = None

    @property
    def stopped(self) -> RunStop | None:
        """The error that stopped the run, or None while requests may still go out."""
        return self._stopped or _interrupted

    def stop(self, error: RunStop) -> None:
        """Admit nothing more; later `slot()` and `pace()` calls raise `error`."""
        if self._stopped is None:
            self._stopped = error

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one of the `concurrency` slots for a whole call; raises once stopped."""
        self._raise_if_stopped()
        async with self._slots:
            # Checked again: the run may have stopped while we waited for a slot.
            self._raise_if_stopped()
            yield

    @asynccontextmanager
    async def attempt(self) -> AsyncIterator[None]:
        """Hold a place of the adaptive window (and a shared slot) for one HTTP attempt.

        Raises the RunStop once stopped, SharedLimitUnavailable when the shared limit's
        Prefect server gives no slot (nothing is sent without it).
        """
        self._raise_if_stopped()
        async with self.window.attempt():
            self._raise_if_stopped()  # the run may have stopped while we waited
            if self._shared is None:
                yield
                return
            async with self._shared.slot():
                self._raise_if_stopped()
                yield

    async def pace(self) -> None:
        """Wait for the rate cap before one HTTP attempt; raises the RunStop once stopped."""
        self._raise_if_stopped()
        if self._shared is not None:
            await self._shared.pace()
            self._raise_if_stopped()
        if self._limiter is not None:
            await self._limiter.acquire()
            self._raise_if_stopped()

    def _raise_if_stopped(self) -> None:
        if (error := self.stopped) is not None:
            raise error


def _limiter_for(requests_per_s: float) -> AsyncLimiter:
    """A bucket of one second's worth of requests; under 1/s, of one request per period.

    aiolimiter refuses to acquire from a bucket smaller than one request (ValueError),
    so a rate of 0.5/s is one request per 2 s, not half a request per second.
    """
    if requests_per_s >= 1:
        return AsyncLimiter(max_rate=requests_per_s, time_period=1.0)
    return AsyncLimiter(max_rate=1, time_period=1.0 / requests_per_s)
