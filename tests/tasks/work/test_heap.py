"""Freed heap pages go back to the system during a run (tasks/work/heap.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tasks.work.heap import HeapTrimmer, release_free_heap

STATUS = Path("/proc/self/status")


def _rss_mb() -> float:
    for line in STATUS.read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS in /proc/self/status")


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or not STATUS.exists(),
    reason="resident memory is read from /proc/self/status (Linux)",
)
def test_pages_freed_between_kept_blocks_are_given_back() -> None:
    # 80 MB of 4 KB blocks (malloc, not pymalloc), one in 50 kept: glibc cannot shrink
    # its heap past the kept ones, so without a trim the freed 78 MB stay resident.
    if not release_free_heap():
        pytest.skip("this C library has no malloc_trim (glibc's)")
    blocks = [bytes(4000) + bytes([i % 256]) for i in range(20_000)]
    kept = blocks[::50]
    before_free = _rss_mb()
    del blocks
    freed = _rss_mb()
    release_free_heap()
    trimmed = _rss_mb()
    assert freed - trimmed > 0.5 * 78, (before_free, freed, trimmed)
    del kept  # held until after the trim: the freed pages sit between kept blocks


def test_the_trimmer_trims_once_per_interval() -> None:
    now = [100.0]
    released: list[float] = []

    def release() -> bool:
        released.append(now[0])
        return True

    trimmer = HeapTrimmer(every_s=5.0, clock=lambda: now[0], release=release)
    for step_s in (1.0, 3.0, 0.9):  # 4.9 s: not yet
        now[0] += step_s
        trimmer.now_and_then()
    assert trimmer.trims == 0
    now[0] += 0.1
    trimmer.now_and_then()
    trimmer.now_and_then()
    assert trimmer.trims == 1
    now[0] += 5.0
    trimmer.now_and_then()
    assert trimmer.trims == 2
    assert released == [105.0, 110.0]  # called on the interval, never in between


def test_a_c_library_without_malloc_trim_counts_no_trim() -> None:
    now = [0.0]
    trimmer = HeapTrimmer(every_s=1.0, clock=lambda: now[0], release=lambda: False)
    now[0] += 1.0
    trimmer.now_and_then()
    assert trimmer.trims == 0
