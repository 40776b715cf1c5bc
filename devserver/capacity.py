"""The devserver's capacity: at most N requests in flight and a token bucket of R requests/s.

Both are checked when a request arrives, before any latency or work: a request over
either answers 429 with the configured Retry-After at once, like a gateway in front of
a busy service. Every admitted request is counted until its handler returns, so the
ledger can show how many were in flight when each one arrived.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Admission:
    """The verdict on one arriving request."""

    refused: str | None  # "capacity" or "rate" when refused, None when admitted
    in_flight: int  # requests in flight on arrival, this one included when admitted


class CapacityGuard:
    """In-flight cap and token bucket of one devserver; thread-safe, clock injectable.

    `capacity` None: no in-flight cap. `rate_per_s` None: no bucket. The bucket holds one
    second of requests (at least one) and starts full, as a gateway's usually does.
    """

    def __init__(
        self,
        *,
        capacity: int | None,
        rate_per_s: float | None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._capacity = capacity
        self._rate_per_s = rate_per_s
        self._burst = max(1.0, rate_per_s or 0.0)
        self._tokens = self._burst
        self._clock = clock
        self._refilled_at = clock()
        self._in_flight = 0
        self._peak = 0
        self._lock = threading.Lock()

    @property
    def peak_in_flight(self) -> int:
        """The most admitted requests in flight at once so far."""
        with self._lock:
            return self._peak

    @property
    def in_flight(self) -> int:
        """Admitted requests not answered yet, right now."""
        with self._lock:
            return self._in_flight

    def admit(self) -> Admission:
        """Admit one arriving request or say why not; an admitted one must be `release()`d."""
        with self._lock:
            if self._capacity is not None and self._in_flight >= self._capacity:
                return Admission(refused="capacity", in_flight=self._in_flight)
            if self._rate_per_s is not None and not self._take_token():
                return Admission(refused="rate", in_flight=self._in_flight)
            self._in_flight += 1
            self._peak = max(self._peak, self._in_flight)
            return Admission(refused=None, in_flight=self._in_flight)

    def release(self) -> None:
        """One admitted request has been answered."""
        with self._lock:
            self._in_flight -= 1

    def _take_token(self) -> bool:
        now = self._clock()
        rate = self._rate_per_s or 0.0
        self._tokens = min(self._burst, self._tokens + (now - self._refilled_at) * rate)
        self._refilled_at = now
        if self._tokens < 1.0:
            return False
        self._tokens -= 1.0
        return True
