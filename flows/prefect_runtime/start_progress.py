"""Whether a starting server is making progress: its process is using CPU.

A busy host makes Prefect's temporary server slow to start, not stuck: while its process
is alive and its CPU time grows, the start is waited for (prefect_api.py). It is judged
stuck only when its CPU time has not grown for `stall_s` (a stopped process, one blocked
for good) or it exits. CPU time is the kernel's count for the process (/proc/PID/stat,
Linux): where there is none to read, every look counts as progress and only the
wall-clock limit remains.
"""

from __future__ import annotations

import time
from pathlib import Path

STALL_S = 60.0  # a start whose process used no CPU for this long is stuck
_CPU_FIELDS = slice(11, 15)  # utime, stime, cutime, cstime after the ")" of the name


def cpu_ticks(pid: int) -> int | None:
    """The CPU time the process and its waited-for children used, in clock ticks; None
    if it cannot be read (no /proc, the process is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()  # the name may hold spaces and parentheses
    return sum(int(x) for x in fields[_CPU_FIELDS])


class StartProgress:
    """Watches one process: `stalled_s()` is how long its CPU time has stood still."""

    def __init__(self, pid: int, *, stall_s: float = STALL_S) -> None:
        self.stall_s = stall_s
        self._pid = pid
        self._ticks = cpu_ticks(pid)
        self._moved_at = time.monotonic()

    def stalled_s(self) -> float:
        """Seconds since the process last used CPU (as far as these looks saw)."""
        ticks = cpu_ticks(self._pid)
        if ticks is None or ticks != self._ticks:
            self._ticks = ticks
            self._moved_at = time.monotonic()
        return time.monotonic() - self._moved_at

    def stuck(self) -> bool:
        """No CPU used for `stall_s`."""
        return self.stalled_s() >= self.stall_s
