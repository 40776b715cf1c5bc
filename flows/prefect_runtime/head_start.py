"""The head start: a run's drain begun with the plain functions while Prefect's API starts.

Requests need no Prefect server; only the flow run's record does. So while the temporary
server boots (prefect_api.py), `medasr run` and `medasr rerun-failures` replay the
journal (paid answers first, before anything is sent), claim batches and transcribe them
with `process_batch` over the run's one BatchContext. When the API answers, the command
hands over: the head start claims nothing more, and the flow's drain (flows/drain.py)
carries on with the same context, result and `--limit` budget, waits for the head
start's batches still in flight, and counts every file in its summary, progress and run
record. Nothing is claimed twice: claims are leases in the store.

No head start when a shared limit is configured (MEDASR_PIPELINE__GLOBAL_CONCURRENCY):
its slots are held by Prefect, so requests wait for the API. Nor when PREFECT_API_URL
names a running server: it answers at once, there is nothing to wait for.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from flows.batch_loops import BatchLoops, DrainStart
from storage.errors import StoreError
from storage.records import ItemRecord
from tasks.transcription.bookkeeping import expected_files
from tasks.transcription.file_run import process_batch
from tasks.transcription.progress import FileOutcome

if TYPE_CHECKING:
    from flows.setup.bootstrap import Run


def may_start_early(run: Run) -> bool:
    """No head start with a shared limit: Prefect holds its slots."""
    return run.settings.pipeline.global_concurrency is None


class HeadStart(DrainStart):
    """The drain's shared parts, and its first batches run without Prefect."""

    def __init__(self, run: Run) -> None:
        super().__init__(run, ctx=run.batch_context(shared=None))
        self._handed_over = False
        self._prepared = asyncio.Event()
        self._replay_error: StoreError | None = None
        self._drain = asyncio.create_task(self._drain_until_handed_over())

    @property
    def idle(self) -> bool:
        """Nothing more to do before the flow: drained, stopped or handed over."""
        return self._drain.done()

    async def prepared(self) -> int:
        """Wait for the count of expected files and the journal replay; the planned
        count. Raises the StoreError the replay raised."""
        await self._prepared.wait()
        if self._replay_error is not None:
            raise self._replay_error
        return self.result.planned

    async def hand_over(self) -> None:
        """Claim nothing more; return once the batches in flight are finished and counted."""
        self._handed_over = True
        await self._drain

    async def stop(self) -> None:
        """Hand over to nobody: let the files in flight finish, close the context. Raises
        what ended the head start's drain (a StoreError), the context closed first."""
        try:
            await self.hand_over()
        finally:
            await self.ctx.client.aclose()
            await self.ctx.aclose()

    def finished_files(self) -> int:
        """Files finished so far: done, failed or skipped (not given back)."""
        return sum(n for outcome, n in self.result.stats.files.items() if outcome != "released")

    async def _drain_until_handed_over(self) -> None:
        run = self._run
        try:
            await self.count_and_replay(_count_in_thread)
        except StoreError as exc:  # the flow's drain raises it, inside its run record
            self._replay_error = exc
            return
        finally:
            self._prepared.set()
        loops = BatchLoops(
            ctx=self.ctx,
            result=self.result,
            language=run.claim_language,
            source_prefix=run.source_prefix,
            batch_size=run.settings.pipeline.batch_size,
            budget=self.budget,
            transcribe=self._transcribe,
            keep_claiming=lambda: not self._handed_over,
        )
        await loops.run_side_by_side()

    async def _transcribe(self, items: Sequence[ItemRecord], name: str) -> list[FileOutcome]:
        return await process_batch(items, ctx=self.ctx)


async def _count_in_thread(*args: Any, **kwargs: Any) -> int:
    """The expected files counted by the plain function, off the event loop."""
    return await asyncio.to_thread(expected_files, *args, **kwargs)
