"""Drain results of given outcomes, for tests of the run summary."""

from __future__ import annotations

from config.errors import RunStop
from flows.drain import DrainResult
from tasks.transcription.progress import FileOutcome, RunStats


def drained(*outcomes: str, stopped: RunStop | None = None) -> DrainResult:
    stats = RunStats()
    for outcome in outcomes:
        stats.add(FileOutcome(f"/a/{outcome}.wav", outcome))
    return DrainResult(stats=stats, wall_s=1.0, planned=len(outcomes), stopped=stopped)
