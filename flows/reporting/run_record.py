"""The run row of a flow run: recorded at its start, finished with its counts at its end."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def recorded_run(store: UnitOfWorkFactory, *, source: str, language: str) -> Iterator[RecordedRun]:
    """A run row for the block: `error` if the block raised, else the summary's status."""
    run = RecordedRun(start_run_task(store=store, source=source, language=language))
    try:
        yield run
    except BaseException:
        try:
            finish_run_task(store=store, run_id=run.run_id, counts=run.counts(), status=_ERROR)
        except Exception:  # the original error matters more than the bookkeeping
            logger.warning("could not record the end of run %d", run.run_id, exc_info=True)
        raise
    status = run.summary.run_status() if run.summary is not None else _ERROR
    finish_run_task(store=store, run_id=run.run_id, counts=run.counts(), status=status)
