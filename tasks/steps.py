"""The Prefect tasks, all of them: plain functions of the wings wrapped with their names
and caching. The wings stay plain functions a test or a command calls without
Prefect; only this module of tasks/ makes them task runs.

Each is `task(...)(fn)`, so a task takes exactly its function's arguments. A task run
handles a batch of files, never one file: a task run costs Prefect client and server
work far above a file's own, and backlogs reach hundreds of thousands of files.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ParamSpec, TypeVar

from prefect import Task, task
from prefect.cache_policies import NONE

from config.settings import Settings
from storage.interface import UnitOfWorkFactory
from storage.records import ItemRecord
from tasks.discovery.discover import discover_and_register
from tasks.transcription.batch import BatchContext
from tasks.transcription.batch_claim import claim_batch
from tasks.transcription.bookkeeping import expected_files, finish_run, requeue_failed, start_run
from tasks.transcription.file_run import process_batch
from tasks.transcription.progress import FileOutcome

# No caching and no stored results: every step reads or writes the store itself. Task runs
# carry the task's name without Prefect's random suffix; a batch is named by its size.
# No tags (the flow run has medasr's): Prefect takes a slot of each tag's concurrency limit
# from its server before a tagged task run starts, limit or not, and that call held the
# next batch back 0.5-2.2 s with nothing in flight (tests/flows/test_task_runs_untagged.py).
P = ParamSpec("P")
R = TypeVar("R")
__all__ = [
    "claim_batch",
    "deliver_task",
    "discover_task",
    "expected_files_task",
    "finish_run_task",
    "requeue_failures_task",
    "start_run_task",
    "transcribe_batch_task",
]
_OPTIONS: dict[str, Any] = {"cache_policy": NONE, "persist_result": False}


def _task(name: str, fn: Callable[P, R]) -> Task[P, R]:
    return task(name=name, task_run_name=name, **_OPTIONS)(fn)


async def transcribe_batch(
    items: Sequence[ItemRecord],
    *,
    ctx: BatchContext,
    outcomes: Callable[[Sequence[FileOutcome]], None],
) -> None:
    """`process_batch`, its outcomes handed to `outcomes` rather than returned.

    Prefect remembers what a task returns, and each element of it, for the rest of the
    flow run (prefect.utilities.engine.link_state_to_result: an entry per element, to
    link later tasks to it): 50 outcomes a batch grew a 10^5-file run by ~75 MB. None is
    not remembered.
    """
    outcomes(await process_batch(items, ctx=ctx))


async def deliver(
    *, settings: Settings, store: UnitOfWorkFactory, language: str | None, format_name: str
) -> dict[str, Any]:
    """The delivery wing's `deliver_and_summarize`, imported at the first delivery: with
    it come FHIR's models, 0.1 s of CPU at the start of every `medasr run` otherwise, for
    a step taken only with MEDASR_DELIVER=true."""
    from tasks.delivery.deliverer import deliver_and_summarize

    return await deliver_and_summarize(
        settings=settings, store=store, language=language, format_name=format_name
    )


# No retries for discovery: a listing error is the user's to fix.
discover_task = _task("discover", discover_and_register)
transcribe_batch_task = _task("transcribe-batch", transcribe_batch)
expected_files_task = _task("expected-files", expected_files)
requeue_failures_task = _task("requeue-failures", requeue_failed)
start_run_task = _task("start-run", start_run)
finish_run_task = _task("finish-run", finish_run)
# The nightly delivery step. Its task runs keep Prefect's own names ("deliver-<suffix>").
# Call it with `settings` and `store` wrapped in prefect's `quote`, so that Prefect does
# not walk them (the settings hold secrets) and they never become recorded task inputs.
deliver_task = task(name="deliver", **_OPTIONS)(deliver)
