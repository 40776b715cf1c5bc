"""The gate every request passes: bounded concurrency, an optional rate cap, a stop switch.

A call to the service holds one slot (`slot()`) for all its attempts, retries and
backoff waits included; each HTTP attempt, the first and every retry, first waits for
the rate cap (`pace()`). Once the gate is stopped (credentials rejected, or a setting
that fails every request, such as a certificate that does not verify) no attempt starts
any more, not even the retry of a call already in flight.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from aiolimiter import AsyncLimiter

from config.errors import ConfigError
from service.errors import CredentialsRejected
from tasks.errors import RunInterrupted

# What stops a whole run at once: the service refusing our credentials, a setting that
# fails for every request alike (a certificate that does not verify), or the operator.
RunStop = CredentialsRejected | ConfigError | RunInterrupted

# Every gate alive in this process, so a signal handler can stop the run they belong to.
_live_gates: weakref.WeakSet[RequestGate] = weakref.WeakSet()


_interrupted = False  # set once per process: gates made later start stopped


def interrupt_running_gates() -> int:
    """Stop every live gate, and every later one, with RunInterrupted; returns how many."""
    global _interrupted  # the process-wide switch a signal handler flips
    _interrupted = True
    gates = [gate for gate in _live_gates if gate.stopped is None]
    for gate in gates:
        gate.stop(RunInterrupted("interrupted by the operator"))
    return len(gates)


class RequestGate:
    """Admits at most `concurrency` calls at once and `requests_per_s` attempts per second.

    Once `stop()` is called (a RunStop error), nobody else is admitted: requests
    already on the wire finish, and every later `slot()` or `pace()` raises the stored error.
    """

    def __init__(self, *, concurrency: int, requests_per_s: float | None = None) -> None:
        self._slots = asyncio.Semaphore(concurrency)
        self._limiter = _limiter_for(requests_per_s) if requests_per_s else None
        self._stopped: RunStop | None = None
        if _interrupted:  # the operator stopped the run before this gate existed
            self._stopped = RunInterrupted("interrupted by the operator")
        _live_gates.add(self)

    @property
    def stopped(self) -> RunStop | None:
        """The error that stopped the run, or None while requests may still go out."""
        return self._stopped

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

    async def pace(self) -> None:
        """Wait for the rate cap before one HTTP attempt; raises CredentialsRejected if stopped."""
        self._raise_if_stopped()
        if self._limiter is not None:
            await self._limiter.acquire()
            self._raise_if_stopped()

    def _raise_if_stopped(self) -> None:
        if self._stopped is not None:
            raise self._stopped


def _limiter_for(requests_per_s: float) -> AsyncLimiter:
    """A bucket of one second's worth of requests; under 1/s, of one request per period.

    aiolimiter refuses to acquire from a bucket smaller than one request (ValueError),
    so a rate of 0.5/s is one request per 2 s, not half a request per second.
    """
    if requests_per_s >= 1:
        return AsyncLimiter(max_rate=requests_per_s, time_period=1.0)
    return AsyncLimiter(max_rate=1, time_period=1.0 / requests_per_s)
