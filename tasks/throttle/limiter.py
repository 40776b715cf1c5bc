"""Adaptive concurrency under a ceiling: AIMD that remembers where it was throttled.

`AimdWindow` is the plain, deterministic rule; `AdaptiveLimiter` puts it behind an async
context manager held for each HTTP attempt, and adds the Retry-After pause that stops
new sends for everyone.

Why this rule (TCP's AIMD with a CUBIC-like plateau; figures in bench/README.md):
- The window starts at the ceiling (MEDASR_CONCURRENCY), so a service with room for it
  is used fully from the first second; a service that is smaller says so at once.
- A throttled answer (429, or 503) of a request that was sent with k of ours already in
  flight cuts the window to min(k, 0.75 x window): k is what the service took alongside
  it, 0.75 keeps the cut multiplicative when k says little (shared service). One cut per
  episode: answers to requests sent before the last cut only lower it to their own k.
- Clean answers grow the window by one per window of them (additive increase), but
  only while the window is full (an idle window proves nothing) and, next to the level
  that was throttled, only after 32 windows of clean answers, doubled each time that
  level throttles again (to 256 windows). A failed probe pauses the whole run for a
  Retry-After, which costs about Retry-After / latency windows of answers whatever the
  window: counted in windows, a probe's share of the run is the same at capacity 3 and
  16 (with Retry-After 1 s and 250 ms answers, 4 of 36 windows at the first probe).
  Passing that level forgets it.
Gradient/Vegas limiters read rising latency; this service answers a full queue with a
fast 429 instead, so latency carries no signal and the 429 itself is the measurement.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Final

from service.errors import Throttled

logger = logging.getLogger("medasr.limiter")

THROTTLE_STATUSES: Final = frozenset({429, 503})
DECREASE_FACTOR: Final = 0.75
FIRST_PROBE_WINDOWS: Final = 32
MAX_PROBE_WINDOWS: Final = 256


@dataclass(frozen=True)
class Ticket:
    """One admitted request, as the window saw it when admitting it."""

    others_in_flight: int  # our requests already in flight when it was admitted
    epoch: int  # cuts of the window so far, when it was admitted
    full_window: bool  # it took the last free place of the window


class AimdWindow:
    """How many requests may be in flight now, between 1 and `ceiling`; no clock, no I/O."""

    def __init__(self, *, ceiling: int) -> None:
        if ceiling < 1:
            raise ValueError(f"the ceiling must be at least 1 (got {ceiling})")
        self.ceiling = ceiling
        self.in_flight = 0
        self._limit = ceiling
        self._epoch = 0
        self._clean = 0  # clean full-window answers since the last step up
        self._throttled_at: int | None = None  # requests in flight that were refused
        self._probe_windows = FIRST_PROBE_WINDOWS

    @property
    def limit(self) -> int:
        """Requests allowed in flight now."""
        return self._limit

    def admit(self) -> Ticket | None:
        """A ticket for one more request, or None when the window is full."""
        if self.in_flight >= self._limit:
            return None
        ticket = Ticket(
            others_in_flight=self.in_flight,
            epoch=self._epoch,
            full_window=self.in_flight + 1 >= self._limit,
        )
        self.in_flight += 1
        return ticket

    def answered(self, ticket: Ticket) -> bool:
        """A clean answer; True when it grew the window."""
        self.in_flight -= 1
        if not ticket.full_window or ticket.epoch != self._epoch or self._limit >= self.ceiling:
            return False
        self._clean += 1
        if self._clean < self._answers_per_step():
            return False
        self._clean = 0
        self._limit += 1
        if self._throttled_at is not None and self._limit > self._throttled_at:
            self._throttled_at = None  # the service has room beyond it now
            self._probe_windows = FIRST_PROBE_WINDOWS
        return True

    def throttled(self, ticket: Ticket) -> bool:
        """A throttled answer (429/503); True when it cut the window (once per episode)."""
        self.in_flight -= 1
        if ticket.epoch != self._epoch:
            # Sent before the last cut: the same episode, no second cut; but answers come
            # back in any order, and what it saw in flight bounds the capacity too.
            if ticket.others_in_flight >= self._limit:
                return False
            self._limit = max(1, ticket.others_in_flight)
            self._throttled_at = ticket.others_in_flight + 1
            self._clean = 0
            return True
        level = ticket.others_in_flight + 1
        if self._throttled_at is not None and level >= self._throttled_at:
            self._probe_windows = min(MAX_PROBE_WINDOWS, self._probe_windows * 2)
        self._throttled_at = level
        self._epoch += 1
        self._clean = 0
        cut = min(ticket.others_in_flight, int(self._limit * DECREASE_FACTOR))
        self._limit = max(1, cut)
        return True

    def released(self, ticket: Ticket) -> None:
        """An attempt that ended otherwise (another error, cancelled): no verdict."""
        self.in_flight -= 1

    def _answers_per_step(self) -> int:
        if self._limit + 1 == self._throttled_at:  # the next step probes the throttled level
            return self._probe_windows * self._limit
        return self._limit


@dataclass(frozen=True)
class LimitChange:
    """One change of the window, for logs and the benchmark's plot."""

    at_s: float  # clock seconds
    limit: int
    reason: str  # "throttled", "clean answers"


class AdaptiveLimiter:
    """An AimdWindow for one process's requests, with the shared Retry-After pause.

    Hold `attempt()` around each HTTP attempt: it waits for a place in the window and for
    any pause to end. An exception leaving it with status 429 or 503 cuts the window, one
    with `retry_after_s` pauses new attempts of everyone for that long; a clean exit may
    grow it. A pause longer than `longest_pause_s` (what one request may take in all) is
    not waited out: every attempt raises Throttled at once, unsent, as the call that met
    the Retry-After failed. Single event loop; not thread-safe.
    """

    def __init__(
        self,
        *,
        ceiling: int,
        clock: Callable[[], float] = time.monotonic,
        longest_pause_s: float | None = None,
    ) -> None:
        self._window = AimdWindow(ceiling=ceiling)
        self._clock = clock
        self._longest_pause_s = longest_pause_s
        self._paused_until = 0.0
        self._changed = asyncio.Event()
        self.changes: list[LimitChange] = []

    @property
    def limit(self) -> int:
        """Requests allowed in flight now."""
        return self._window.limit

    @property
    def in_flight(self) -> int:
        """Our requests in flight now."""
        return self._window.in_flight

    def paused_for_s(self) -> float:
        """Seconds until new attempts may start again (0 when not paused)."""
        return max(0.0, self._paused_until - self._clock())

    @asynccontextmanager
    async def attempt(self) -> AsyncIterator[None]:
        """Hold a place in the window for one HTTP attempt; see the class docstring."""
        ticket = await self._admit()
        try:
            yield
        except BaseException as exc:
            self._settle_failure(ticket, exc)
            raise
        else:
            if self._window.answered(ticket):
                self._note("clean answers")
        finally:
            self._wake()

    async def _admit(self) -> Ticket:
        while True:
            changed = self._changed
            pause_s = self.paused_for_s()
            if self._longest_pause_s is not None and pause_s > self._longest_pause_s:
                raise _pause_too_long(pause_s)
            if pause_s <= 0:
                ticket = self._window.admit()
                if ticket is not None:
                    return ticket
            try:
                async with asyncio.timeout(pause_s if pause_s > 0 else None):
                    await changed.wait()
            except TimeoutError:
                pass  # the pause is over: look again

    def _settle_failure(self, ticket: Ticket, exc: BaseException) -> None:
        status = getattr(exc, "status", None)
        if status not in THROTTLE_STATUSES:
            self._window.released(ticket)
            return
        if self._window.throttled(ticket):
            self._note("throttled")
        retry_after_s = getattr(exc, "retry_after_s", None)
        if isinstance(retry_after_s, int | float) and retry_after_s > 0:
            self._paused_until = max(self._paused_until, self._clock() + retry_after_s)

    def _note(self, reason: str) -> None:
        change = LimitChange(at_s=self._clock(), limit=self._window.limit, reason=reason)
        self.changes.append(change)
        level = logging.INFO if reason == "throttled" else logging.DEBUG
        logger.log(level, "requests in flight now at most %d (%s)", change.limit, reason)

    def _wake(self) -> None:
        """Let every waiter look again (a place freed, the window grew or a pause began)."""
        self._changed.set()
        self._changed = asyncio.Event()


def _pause_too_long(pause_s: float) -> Throttled:
    """What an attempt raises, unsent, while a pause outlasts any request's budget."""
    return Throttled(
        f"the service asked every request to wait {pause_s:.0f} s (HTTP 429 Retry-After), "
        "longer than one request may take (MEDASR_SERVICE__RETRY_MAX_TOTAL_S); not sent "
        "(retryable: `medasr rerun-failures` once that time has passed)",
        retry_after_s=pause_s,
    )
