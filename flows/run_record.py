"""The run row of a flow run: recorded at its start, finished with its counts at its end."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from flows.summary import run_counts, run_status
from storage.interface import UnitOfWorkFactory
from tasks.steps import finish_run_task, start_run_task

logger = logging.getLogger("medasr.flows")


@dataclass
class RecordedRun:
    """Set `summary` before the block ends; the run row gets its counts and status."""

    run_id: int
    summary: dict[str, Any] = field(default_factory=dict)


@contextmanager
def recorded_run(store: UnitOfWorkFactory, *, source: str, language: str) -> Iterator[RecordedRun]:
    """A run row for the block: `error` if the block raised, else the summary's status."""
    run = RecordedRun(start_run_task(store=store, source=source, language=language))
    try:
        yield run
    except BaseException:
        try:
            finish_run_task(
                store=store, run_id=run.run_id, counts=run_counts(run.summary), status="error"
            )
        except Exception:  # the original error matters more than the bookkeeping
            logger.warning("could not record the end of run %d", run.run_id, exc_info=True)
        raise
    finish_run_task(
        store=store,
        run_id=run.run_id,
        counts=run_counts(run.summary),
        status=run_status(run.summary) if run.summary else "error",
    )
