"""Work through pending items in batches until none are left, the limit is hit, or credentials fail.

Shared by the backlog flow and the rerun flow. Two batch loops (flows/batch_loops.py)
run side by side so the request slots stay busy while one batch finishes its slowest
file. Paid answers a run before could not store (the journal) are recorded first, before
anything is sent. A batch is claimed first and then handed to a task run named by its
size ("batch 3 (50 files)"); a claim that finds nothing is no task run. A run begun
while Prefect started (flows/prefect_runtime/head_start.py) is carried on: same context,
counts, budget.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from contextlib import ExitStack
from typing import Any, cast
from uuid import UUID

from prefect.artifacts import acreate_progress_artifact, aupdate_progress_artifact
from prefect.context import FlowRunContext
from prefect.utilities.annotations import quote

from config.settings import Settings
from flows.batch_loops import BATCH_LOOPS, BatchLoops, DrainResult, DrainStart, TranscribeBatch
from flows.prefect_runtime.head_start import HeadStart
from flows.prefect_runtime.run_logs import FileLines
from flows.setup.bootstrap import Run
from storage.records import ItemRecord
from tasks.errors import SharedLimitUnavailable
from tasks.steps import expected_files_task, transcribe_batch_task
from tasks.throttle.global_limit import SharedLimit, ensure_shared_limits
from tasks.transcription.batch import BatchContext
from tasks.transcription.progress import FileOutcome, observing

__all__ = ["BATCH_LOOPS", "DrainResult", "drain_pending"]
PROGRESS_KEY = "medasr-progress"


async def drain_pending(run: Run, *, head_start: HeadStart | None = None) -> DrainResult:
    """Claim and transcribe the run's pending items, carrying on its `head_start` if it
    had one (flows/prefect_runtime/head_start.py); returns counts, never raises for a single file.
    Log lines name files relative to the run's source roots."""
    head: HeadStart | _Started | None = head_start
    if head is None:
        head = _Started(run, ctx=run.batch_context(shared=await _shared(run.settings)))
        await head.prepare()
    planned = await head.prepared()
    result = head.result
    finished = sum(result.stats.files.values())  # by the head start, batches in flight too
    progress = await _ProgressArtifact.create(planned=planned, processed=finished)
    ctx = head.ctx
    loops = BatchLoops(
        ctx=ctx,
        result=result,
        language=run.claim_language,
        source_prefix=run.source_prefix,
        batch_size=run.settings.pipeline.batch_size,
        budget=head.budget,
        transcribe=_as_task_run(ctx),
    )
    lines = FileLines(source_roots=run.source_roots, planned=planned, done=finished)
    with ExitStack() as observers:
        observers.callback(lines.flush)  # after it stops observing: the last calm lines
        observers.enter_context(observing(progress))
        observers.enter_context(observing(lines))
        follower = asyncio.create_task(progress.follow())
        try:
            await loops.run_side_by_side(alongside=head.hand_over())
        finally:
            follower.cancel()
            await ctx.client.aclose()
            await ctx.aclose()
    result.stopped = ctx.gate.stopped
    # Every expected file is through: the bar ends full; a stopped run shows how far it got.
    await progress.show(full=result.stopped is None)
    result.wall_s = time.monotonic() - head.started_at
    return result


def _as_task_run(ctx: BatchContext) -> TranscribeBatch:
    """Each batch as one task run named by its size ("batch 3 (50 files)")."""

    async def transcribe(items: Sequence[ItemRecord], name: str) -> list[FileOutcome]:
        task = transcribe_batch_task.with_options(task_run_name=name)
        outcomes: list[FileOutcome] = []
        # quote: Prefect would otherwise walk every field of the batch's items and of the
        # whole context, twice per task run, looking for futures, a cost paid per file;
        # the task gets them unwrapped.
        await task(
            cast(Sequence[ItemRecord], quote(items)),
            ctx=cast(BatchContext, quote(ctx)),
            outcomes=outcomes.extend,
        )
        _forget_empty_assets()
        return outcomes

    return transcribe


def _forget_empty_assets() -> None:
    """Drop the flow run's empty asset entries of finished task runs (one per batch).

    Prefect keeps, per task run, the assets it would hand a downstream task
    (`FlowRunContext.task_run_assets`) for the whole flow run: an empty set for each of
    medasr's batches, 20,000 of them at 10^6 files. Prefect reads an entry only for a task
    fed another task's result, and treats a missing one as an empty one.
    """
    context = FlowRunContext.get()
    if context is None:
        return
    assets = context.task_run_assets
    for task_run_id in [key for key, found in assets.items() if not found]:
        del assets[task_run_id]


class _Started(DrainStart):
    """A drain without a head start: counted as a task run and replayed, here."""

    async def prepare(self) -> None:
        await self.count_and_replay(_count_as_task_run)

    async def prepared(self) -> int:
        return self.result.planned

    async def hand_over(self) -> None:
        pass


async def _count_as_task_run(*args: Any, **kwargs: Any) -> int:
    """The expected files counted by a task run (the flow's "expected-files")."""
    planned: int = expected_files_task(*args, **kwargs)
    return planned


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

    def __init__(self, artifact_id: UUID, *, planned: int, processed: int) -> None:
        self._id = artifact_id
        self._planned = planned
        self._processed = processed  # by the head start, before the flow
        self._changed = asyncio.Event()

    @classmethod
    async def create(cls, *, planned: int, processed: int) -> _ProgressArtifact:
        artifact = await acreate_progress_artifact(
            progress=0.0,
            key=PROGRESS_KEY,
            description="Recordings processed in this run (%): done, failed, skipped or held",
        )
        return cls(artifact, planned=planned, processed=processed)

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
