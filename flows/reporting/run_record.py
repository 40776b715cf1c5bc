"""The run row of a flow run: recorded at its start, finished with its counts at its end.

Both are Prefect task runs of plain (sync) functions, run in a thread: a sync task run
called from the flow's event loop would hold the loop for its API calls, and with them
every request of the head start in flight (Prefect's server, just started, answers its
first calls slowly on a busy host: 2.6 s without a single request sent was measured).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from flows.reporting.summary import RunSummary
from storage.interface import UnitOfWorkFactory
from tasks.steps import finish_run_task, start_run_task

logger = logging.getLogger("medasr.flows")
_ERROR = "error"  # the run row's status when the block raised or left no summary


@dataclass
class RecordedRun:
    """Set `summary` before the block ends; the run row gets its counts and status."""

    run_id: int
    summary: RunSummary | None = None

    def counts(self) -> dict[str, int]:
        """The summary's counts, or zeros in the row's own columns when there is none yet."""
        if self.summary is not None:
            return self.summary.run_counts()
        return dict.fromkeys(("done", "failed", "skipped", "requests", "retries", "files"), 0)


@asynccontextmanager
async def recorded_run(
    store: UnitOfWorkFactory, *, source: str, language: str
) -> AsyncIterator[RecordedRun]:
    """A run row for the block: `error` if the block raised, else the summary's status."""
    run_id = await asyncio.to_thread(start_run_task, store=store, source=source, language=language)
    run = RecordedRun(run_id)
    try:
        yield run
    except BaseException:
        try:
            await asyncio.to_thread(
                finish_run_task, store=store, run_id=run_id, counts=run.counts(), status=_ERROR
            )
        except Exception:  # the original error matters more than the bookkeeping
            logger.warning("could not record the end of run %d", run_id, exc_info=True)
        raise
    status = run.summary.run_status() if run.summary is not None else _ERROR
    await asyncio.to_thread(
        finish_run_task, store=store, run_id=run_id, counts=run.counts(), status=status
    )
