"""Freed heap pages handed back to the system during a long run (glibc's `malloc_trim`).

glibc keeps the pages a process frees inside its heaps for later use; only the top of
a heap is returned on its own. Over a long first run those kept pages make resident
memory grow with the number of files while the memory Python holds stays flat, so a
run of a million files would hold far more than it uses. `malloc_trim(0)` gives every
free page back, in the middle of each arena too (madvise), in a few milliseconds. No
maintained library wraps it: a ctypes call on libc, once in a while, and nothing at all
where the C library has no `malloc_trim` (musl, macOS).
"""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable

# Often enough that a run's freed pages never pile up; rare enough that the trim (a few
# ms, the GIL released) costs nothing measurable.
TRIM_EVERY_S = 5.0


def _malloc_trim() -> Callable[[int], int] | None:
    try:
        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None
    return trim


_TRIM = _malloc_trim()


def release_free_heap() -> bool:
    """Give the C heap's free pages back to the system; False where there is no way."""
    if _TRIM is None:
        return False
    _TRIM(0)
    return True


class HeapTrimmer:
    """Calls `release` (`release_free_heap`) at most once every `every_s` seconds."""

    def __init__(
        self,
        *,
        every_s: float = TRIM_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
        release: Callable[[], bool] = release_free_heap,
    ) -> None:
        self._every_s = every_s
        self._clock = clock
        self._release = release
        self._last = clock()
        self.trims = 0

    def now_and_then(self) -> None:
        """Trim if `every_s` has passed since the last trim (or since start)."""
        now = self._clock()
        if now - self._last >= self._every_s:
            self._last = now
            if self._release():
                self.trims += 1


__all__ = ["TRIM_EVERY_S", "HeapTrimmer", "release_free_heap"]
