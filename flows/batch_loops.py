"""The batch loops of a drain: claim a batch, transcribe it, again until nothing is left.

Plain code, no Prefect: the head start (flows/prefect_runtime/head_start.py) runs them
with the plain `process_batch` while Prefect's API starts; the flow's drain
(flows/drain.py) runs them with each batch as a named task run. Both share one
`DrainResult` and one `Budget`, so the files of both are counted once and `--limit`
covers them all.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from config.errors import RunStop
from flows.reporting.attention import needs_check
from storage.records import ItemRecord
from tasks.transcription.batch import BatchContext
from tasks.transcription.batch_claim import claim_batch
from tasks.transcription.progress import FileOutcome, RunStats, progress_observer
from tasks.work.journal import replay_journal
from tasks.work.side_by_side import all_ended

if TYPE_CHECKING:
    from flows.setup.bootstrap import Run
from tasks.work.heap import HeapTrimmer

BATCH_LOOPS = 2

# Transcribes one claimed batch, given its name ("batch 3 (50 files)").
TranscribeBatch = Callable[[Sequence[ItemRecord], str], Awaitable[list[FileOutcome]]]
# Counts the files a drain expects, with expected_files' arguments: the plain function
# in a worker thread (the head start) or its Prefect task run (the flow's drain).
CountFiles = Callable[..., Awaitable[int]]


@dataclass
class DrainResult:
    """What a drain did; `stopped` holds the error that ended it early (credentials, config)."""

    stats: RunStats
    wall_s: float
    planned: int
    outcomes: list[FileOutcome] = field(default_factory=list)  # only those to check
    stopped: RunStop | None = None
    batches: int = 0  # batches started (task runs, and the head start's plain batches)
    finished: int = 0  # files through this drain; `stats` counts them by outcome

    def add(self, outcomes: Sequence[FileOutcome]) -> None:
        """Count a batch's files; keep only the outcomes a person must check (memory stays
        flat over 10^6 done files)."""
        self.finished += len(outcomes)
        self.outcomes.extend(o for o in outcomes if needs_check(o))


class Budget:
    """How many more files this run may claim (unbounded without a limit)."""

    def __init__(self, limit: int | None) -> None:
        self._left = limit

    def take(self, want: int) -> int:
        """Up to `want` files of what is left."""
        if self._left is None:
            return want
        got = min(want, self._left)
        self._left -= got
        return got

    def give_back(self, unused: int) -> None:
        """Return what a claim did not find."""
        if self._left is not None:
            self._left += unused


class DrainStart:
    """A drain set up once per run, whoever begins it (the head start or the flow): its
    context, result, `--limit` budget and the start of its wall time."""

    def __init__(self, run: Run, *, ctx: BatchContext) -> None:
        self.started_at = time.monotonic()  # the drain's wall time counts from here
        self.ctx = ctx
        self.result = DrainResult(stats=run.stats, wall_s=0.0, planned=0)
        self.budget = Budget(run.request.limit)
        self._run = run

    async def count_and_replay(self, count: CountFiles) -> None:
        """Count the files the run expects (told to the progress observer), then replay
        the journal: answers paid for by a run before are recorded before any request."""
        run = self._run
        self.result.planned = await count(
            run.store,
            language=run.claim_language,
            source_prefix=run.source_prefix,
            limit=run.request.limit,
        )
        progress_observer().on_planned(files=self.result.planned)
        await asyncio.to_thread(replay_journal, run.store, run.journal)


@dataclass
class BatchLoops:
    """Claim a batch, transcribe it with `transcribe`; again until nothing is left, the
    run stops, or `keep_claiming` says no (the head start handing over to the flow)."""

    ctx: BatchContext
    result: DrainResult
    language: str | None
    source_prefix: str | None
    batch_size: int
    budget: Budget
    transcribe: TranscribeBatch
    keep_claiming: Callable[[], bool] = lambda: True
    drained: bool = False  # a claim found fewer items than it asked for
    failed: bool = False  # a loop (or what ran beside them) raised: nothing more is claimed
    heap: HeapTrimmer = field(default_factory=HeapTrimmer)  # freed pages back, now and then

    async def run_side_by_side(
        self, *, loops: int = BATCH_LOOPS, alongside: Awaitable[None] | None = None
    ) -> None:
        """`loops` loops over the same budget, and `alongside` (a head start's batches
        still in flight). The first error stops every loop's claiming and is raised once
        every batch in flight has ended: the context they share (its decode threads, its
        HTTP client) is closed after the drain, never under a file still in flight."""
        parts = [self.run() for _ in range(loops)] + ([] if alongside is None else [alongside])
        await all_ended(self._claiming_stops_on_error(part) for part in parts)

    async def _claiming_stops_on_error(self, part: Awaitable[None]) -> None:
        try:
            await part
        except BaseException:
            self.failed = True
            raise

    async def run(self) -> None:
        """One loop; several run side by side over the same budget (`run_side_by_side`)."""
        while (
            self.ctx.gate.stopped is None
            and not self.drained
            and not self.failed
            and self.keep_claiming()
        ):
            if self.ctx.audio_budget is not None and self.ctx.audio_budget.reached:
                return  # the audio cap: what is left stays pending for the next run
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
            self.result.add(await self.transcribe(items, name))
            self.heap.now_and_then()
