"""Seeded fault injection: one draw per request, after a scripted prefix; auth expiry."""

from __future__ import annotations

import random
import threading
from collections import deque

from devserver.config import DevServerConfig


class FaultInjector:
    """Decides, per request, which fault (if any) the devserver plays; thread-safe."""

    def __init__(self, config: DevServerConfig) -> None:
        self._rates = config.fault_rates
        self._rng = random.Random(config.seed)
        self._script = deque(config.fault_script)
        self._auth_fail_after = config.auth_fail_after
        self._accepted = 0
        self._lock = threading.Lock()

    def draw(self) -> str:
        """The fault for the next request: one of FAULT_NAMES ("ok" for none)."""
        with self._lock:
            if self._script:
                return self._script.popleft()
            roll = self._rng.random()
        for name, rate in self._rates.items():
            if roll < rate:
                return name
            roll -= rate
        return "ok"

    def admit_authenticated(self) -> bool:
        """Count one authenticated request; False once more than auth_fail_after came in."""
        with self._lock:
            self._accepted += 1
            return self._auth_fail_after is None or self._accepted <= self._auth_fail_after
