"""Virtual time for a service call's retry budget (service.retrying.Clock).

Nothing waits: a wait between attempts and an attempt itself only move the clock, and
the test reads what was asked for (the waits, each attempt's timeout) instead of timing
the call on the wall clock.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx

from config.settings import ServiceSettings
from service.http_client import ServiceSession
from service.retrying import Clock, RetryPolicy


class VirtualClock:
    """A monotonic clock that moves only when the call waits or an attempt runs.

    `attempt_s`: how long each attempt takes (None: every attempt runs out its whole
    timeout, as a service that never answers); an attempt longer than its timeout ends
    with TimeoutError after it, as asyncio.timeout would end it.
    """

    def __init__(self, *, attempt_s: float | None = None) -> None:
        self.now_s = 0.0
        self.waits_s: list[float] = []
        self.timeouts_s: list[float] = []
        self._attempt_s = attempt_s

    def monotonic_s(self) -> float:
        return self.now_s

    async def sleep(self, seconds: float) -> None:
        self.waits_s.append(seconds)
        self.now_s += seconds

    @asynccontextmanager
    async def timeout(self, seconds: float) -> AsyncIterator[None]:
        self.timeouts_s.append(seconds)
        took_s = seconds if self._attempt_s is None else self._attempt_s
        self.now_s += min(took_s, seconds)
        yield
        if took_s > seconds:
            raise TimeoutError

    def clock(self) -> Clock:
        """This clock as the seam a ServiceSession takes."""
        return Clock(monotonic_s=self.monotonic_s, sleep=self.sleep, timeout=self.timeout)

    def session(
        self, service: ServiceSettings, *, http: httpx.AsyncClient | None = None
    ) -> ServiceSession:
        """A ServiceSession of these settings that reads and spends time on this clock."""
        policy = RetryPolicy.of(service)
        return ServiceSession(policy, ca_bundle=service.ca_bundle, http=http, clock=self.clock())
