"""Work through pending items in batches until none are left, the limit is hit, or credentials fail.

Shared by the backlog flow and the rerun flow. Two batch loops run side by side so
the request slots stay busy while one batch finishes its slowest file. Paid answers a
run before could not store (the journal) are recorded first, before anything is sent.
A batch is claimed first and then handed to a task run named by its size ("batch 3
(50 files)"); a claim that finds nothing is no task run.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from uuid import UUID

from prefect.artifacts import acreate_progress_artifact, aupdate_progress_artifact

from config.errors import RunStop
from config.settings import Settings
from flows.attention import needs_check
from flows.bootstrap import Run
from flows.run_logs import FileLines
from tasks.errors import SharedLimitUnavailable
from tasks.steps import claim_batch, expected_files_task, transcribe_batch_task
from tasks.throttle.global_limit import SharedLimit, ensure_shared_limits
from tasks.transcription.batch import BatchContext
from tasks.transcription.progress import FileOutcome, RunStats, observing, progress_observer
from tasks.work.journal import replay_journal

BATCH_LOOPS = 2
PROGRESS_KEY = "medasr-progress"


@dataclass
class DrainResult:
    """What a drain did; `stopped` holds the error that ended it early (credentials, config)."""

    stats: RunStats
    wall_s: float
    planned: int
    outcomes: list[FileOutcome] = field(default_factory=list)  # only those to check
    stopped: RunStop | None = None
    batches: int = 0  # task runs started
    finished: int = 0  # files through this drain; `stats` counts them by outcome

    def add(self, outcomes: Sequence[FileOutcome]) -> None:
        """Count a batch's files; keep only the outcomes a person must check (memory stays
        flat over 10^6 done files)."""
        self.finished += len(outcomes)
        self.outcomes.extend(o for o in outcomes if needs_check(o))


async def drain_pending(run: Run) -> DrainResult:
    """Claim and transcribe the run's pending items; returns counts, never raises for a
    single file. Log lines name files relative to the run's source roots."""
    started = time.monotonic()
    language, source_prefix, limit = run.request.language, run.source_prefix, run.request.limit
    planned = expected_files_task(
        run.store, language=language, source_prefix=source_prefix, limit=limit
    )
    progress_observer().on_planned(files=planned)
    await asyncio.to_thread(replay_journal, run.store, run.journal)
    progress = await _ProgressArtifact.create(planned=planned)
    result = DrainResult(stats=run.stats, wall_s=0.0, planned=planned)
    ctx = run.batch_context(shared=await _shared(run.settings))
    loops = _BatchLoops(
        ctx=ctx,
        result=result,
        language=language,
        source_prefix=source_prefix,
        batch_size=run.settings.pipeline.batch_size,
        budget=_Budget(limit),
    )
    lines = FileLines(source_roots=run.source_roots, planned=planned)
    with ExitStack() as observers:
        observers.enter_context(observing(progress))
        observers.enter_context(observing(lines))
        follower = asyncio.create_task(progress.follow())
        try:
            await asyncio.gather(*(loops.run() for _ in range(BATCH_LOOPS)))
        finally:
            follower.cancel()
            await ctx.client.aclose()
            await ctx.aclose()
    result.stopped = ctx.gate.stopped
    # Every expected file is through: the bar ends full; a stopped run shows how far it got.
    await progress.show(full=result.stopped is None)
    result.wall_s = time.monotonic() - started
    return result


async def _shared(settings: Settings) -> SharedLimit | SharedLimitUnavailable | None:
    """The Prefect-held limit of every worker, if configured; its error stops the run."""
    pipeline = settings.pipeline
    if pipeline.global_concurrency is None:
        return None
    try:
        return await ensure_shared_limits(
            limit=pipeline.global_concurrency, requests_per_s=pipeline.requests_per_s
        )
    except SharedLimitUnavailable as exc:
        return exc


PROGRESS_EVERY_S = 1.0


class _ProgressArtifact:
    """The progress artifact, moved as each recording is processed (a progress observer)."""

    def __init__(self, artifact_id: UUID, *, planned: int) -> None:
        self._id = artifact_id
        self._planned = planned
        self._processed = 0
        self._changed = asyncio.Event()

    @classmethod
    async def create(cls, *, planned: int) -> _ProgressArtifact:
        artifact = await acreate_progress_artifact(
            progress=0.0,
            key=PROGRESS_KEY,
            description="Recordings processed in this run (%): done, failed, skipped or held",
        )
        return cls(artifact, planned=planned)

    def on_planned(self, *, files: int) -> None:
        self._planned = files

    def on_request(self) -> None:
        pass

    def on_file_finished(self, outcome: FileOutcome) -> None:
        self._processed += 1
        self._changed.set()

    async def follow(self) -> None:
        """Update the artifact whenever files were processed since the last update, at
        most every PROGRESS_EVERY_S (each update is a Prefect API call: per file, at
        100 files/s, they cost more CPU than the files)."""
        while True:
            await self._changed.wait()
            self._changed.clear()
            await self.show(full=False)
            await asyncio.sleep(PROGRESS_EVERY_S)

    async def show(self, *, full: bool) -> None:
        share = 100.0 if full else 100.0 * self._processed / max(self._planned, 1)
        await aupdate_progress_artifact(artifact_id=self._id, progress=min(100.0, share))


@dataclass
class _BatchLoops:
    """Claim a batch, transcribe it as one named task run; again until nothing is left."""

    ctx: BatchContext
    result: DrainResult
    language: str | None
    source_prefix: str | None
    batch_size: int
    budget: _Budget
    drained: bool = False  # a claim found fewer items than it asked for

    async def run(self) -> None:
        """One loop; several run side by side over the same budget."""
        while self.ctx.gate.stopped is None and not self.drained:
            size = self.budget.take(self.batch_size)
            if size == 0:
                return
            items = await claim_batch(
                ctx=self.ctx,
                language=self.language,
                max_files=size,
                source_prefix=self.source_prefix,
            )
            self.budget.give_back(size - len(items))
            self.drained = self.drained or len(items) < size
            if not items:
                return
            self.result.batches += 1
            name = f"batch {self.result.batches} ({len(items)} files)"
            task = transcribe_batch_task.with_options(task_run_name=name)
            self.result.add(await task(items, ctx=self.ctx))


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
