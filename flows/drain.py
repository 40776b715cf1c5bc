"""Work through pending items in batches until none are left, the limit is hit, or credentials fail.

Shared by the backlog flow and the rerun flow. Two batch loops run side by side so
the request slots stay busy while one batch finishes its slowest file.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field

from prefect.artifacts import acreate_progress_artifact, aupdate_progress_artifact

from config.settings import Settings
from service.client import TranscriptionClient
from service.errors import CredentialsRejected
from storage.database import Store
from storage.repository import new_lease_owner
from tasks.gate import RequestGate
from tasks.progress import FileOutcome, RunStats, progress_observer
from tasks.steps import transcribe_batch_task
from tasks.transcribe import BatchContext

BATCH_LOOPS = 2

logger = logging.getLogger("medasr.drain")


@dataclass
class DrainResult:
    """What a drain did; `stopped` holds the credentials error that ended it early."""

    stats: RunStats
    wall_s: float
    planned: int
    outcomes: list[FileOutcome] = field(default_factory=list)
    stopped: CredentialsRejected | None = None


async def drain_pending(
    *,
    settings: Settings,
    store: Store,
    language: str | None,
    source_prefix: str | None = None,
    limit: int | None = None,
) -> DrainResult:
    """Claim and transcribe pending items; returns counts, never raises for a single file."""
    started = time.monotonic()
    planned = _plan_run(store, language=language, limit=limit)
    progress_observer().on_planned(files=planned)
    artifact = await acreate_progress_artifact(
        progress=0.0, key="medasr-progress", description="Files finished in this run"
    )
    stats = RunStats()
    client = TranscriptionClient(settings.service, settings.encryption, on_retry=stats.count_retry)
    ctx = BatchContext(
        pipeline=settings.pipeline,
        store=store,
        client=client,
        gate=RequestGate(
            concurrency=settings.pipeline.concurrency,
            requests_per_s=settings.pipeline.requests_per_s,
        ),
        owner=new_lease_owner(),
        lease_s=settings.storage.lease_s,
        stats=stats,
    )
    result = DrainResult(stats=stats, wall_s=0.0, planned=planned)
    budget = _Budget(limit)

    async def batch_loop() -> None:
        while ctx.gate.stopped is None:
            size = budget.take(settings.pipeline.batch_size)
            if size == 0:
                return
            outcomes = await transcribe_batch_task(
                ctx=ctx, language=language, max_files=size, source_prefix=source_prefix
            )
            budget.give_back(size - len(outcomes))
            result.outcomes.extend(outcomes)
            share = 100.0 * len(result.outcomes) / max(planned, 1)
            await aupdate_progress_artifact(artifact_id=artifact, progress=min(100.0, share))
            if not outcomes:
                return

    try:
        await asyncio.gather(*(batch_loop() for _ in range(BATCH_LOOPS)))
    finally:
        await client.aclose()
        ctx.close()
    result.stopped = ctx.gate.stopped
    result.wall_s = time.monotonic() - started
    return result


def _plan_run(store: Store, *, language: str | None, limit: int | None) -> int:
    """Take back items of dead local runs; the number of files this run expects to do."""
    with store.repository() as repo:
        # A run killed on this machine left its items leased: take them back now.
        reclaimed = repo.release_dead_local_leases()
        pending = repo.pending_count(language=language)
    if reclaimed:
        logger.warning("took back %d items left in progress by an ended run", reclaimed)
    return min(pending, limit) if limit is not None else pending


class _Budget:
    """How many more files this run may claim (unbounded without a limit)."""

    def __init__(self, limit: int | None) -> None:
        self._left = limit

    def take(self, want: int) -> int:
        if self._left is None:
            return want
        got = min(want, self._left)
        self._left -= got
        return got

    def give_back(self, unused: int) -> None:
        if self._left is not None:
            self._left += unused
