"""What bounds sign-in: throttling per client address and per account name (OWASP's
authentication cheat sheet: slow guessing down before any password is hashed), and the
number of password verifications running at once.

A sliding window per key: at most `per_address` attempts from one address and
`per_name` for one name within `window_s`; past that the attempt is refused before
the store is asked or a hash computed, with the seconds until the oldest attempt leaves
the window (Retry-After). Kept in this process's memory, bounded in keys: a restart
forgets it, and the account lockout (counted in the store) still holds.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections import deque
from collections.abc import Callable

from starlette.concurrency import run_in_threadpool

from tasks.review.accounts import Candidate, password_matches

ATTEMPTS_PER_ADDRESS = 30
ATTEMPTS_PER_NAME = 10
WINDOW_S = 60.0
_MAX_KEYS = 10_000


class SignInThrottle:
    """Attempts per address and per name within a sliding window."""

    def __init__(
        self,
        *,
        per_address: int = ATTEMPTS_PER_ADDRESS,
        per_name: int = ATTEMPTS_PER_NAME,
        window_s: float = WINDOW_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._limits = {"address": per_address, "name": per_name}
        self._window_s = window_s
        self._clock = clock
        self._seen: dict[tuple[str, str], deque[float]] = {}
        self._lock = threading.Lock()

    def admit(self, *, address: str, name: str) -> int | None:
        """None when this attempt may go on (it is counted); else the seconds to wait."""
        now = self._clock()
        keys = [("address", address), ("name", name)]
        with self._lock:
            waits = [self._wait_s(key, now=now) for key in keys]
            if any(wait is not None for wait in waits):
                return max(wait for wait in waits if wait is not None)
            for key in keys:
                self._seen.setdefault(key, deque()).append(now)
            if len(self._seen) > _MAX_KEYS:
                self._forget_idle(now=now)
        return None

    def _wait_s(self, key: tuple[str, str], *, now: float) -> int | None:
        times = self._seen.get(key)
        if times is None:
            return None
        while times and times[0] <= now - self._window_s:
            times.popleft()
        if len(times) < self._limits[key[0]]:
            return None
        return max(1, math.ceil(times[0] + self._window_s - now))

    def _forget_idle(self, *, now: float) -> None:
        idle = [
            key
            for key, times in self._seen.items()
            if not times or times[-1] <= now - self._window_s
        ]
        for key in idle:
            del self._seen[key]
        if len(self._seen) > _MAX_KEYS:  # a flood of distinct names: keep the newest half
            newest = sorted(self._seen, key=lambda key: self._seen[key][-1])[len(self._seen) // 2 :]
            self._seen = {key: self._seen[key] for key in newest}


# argon2id spends its memory and time per verification; on a small host two at once
# leave a core for the pages.
VERIFICATIONS_AT_ONCE = 2


class Verifications:
    """Bounds the password verifications running at once (per workstation)."""

    def __init__(self, *, at_once: int = VERIFICATIONS_AT_ONCE) -> None:
        self._at_once = at_once
        self._slots: asyncio.Semaphore | None = None

    async def matches(self, candidate: Candidate, password: str) -> bool:
        """Whether the password is right, verified when a slot is free."""
        if self._slots is None:  # made on the serving loop, not where the app was built
            self._slots = asyncio.Semaphore(self._at_once)
        async with self._slots:
            return await run_in_threadpool(password_matches, candidate, password)
