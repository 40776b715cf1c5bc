"""The Prefect tasks: plain functions wrapped with their names, tags and caching.

Each is `task(...)(fn)`, so a task takes exactly its function's arguments. A task run
handles a batch of files, never one file: each task run costs ~5-10 ms in the client
and ~30 ms of server work, and backlogs reach 100,000 files.
"""

from __future__ import annotations

from typing import Any

from prefect import task
from prefect.cache_policies import NONE

from tasks.discovery.discover import discover_and_register
from tasks.transcription.progress import FileOutcome
from tasks.transcription.runs import expected_files, finish_run, requeue_failed, start_run
from tasks.transcription.transcribe import BatchContext, process_batch
from tasks.work.store_calls import in_store

# No caching and no stored results: every step reads or writes the store itself.
_OPTIONS: dict[str, Any] = {"tags": ["medasr"], "cache_policy": NONE, "persist_result": False}


async def claim_and_transcribe(
    *, ctx: BatchContext, language: str | None, max_files: int, source_prefix: str | None
) -> list[FileOutcome]:
    """Claim up to `max_files` items under a lease and transcribe them; [] when none are left."""
    items = await in_store(  # in a thread: the other batch loop has requests in flight
        ctx.store,
        lambda uow: uow.items.claim_batch(
            owner=ctx.owner,
            language=language,
            limit=max_files,
            lease_s=ctx.lease_s,
            source_prefix=source_prefix,
        ),
    )
    if not items:
        return []
    return await process_batch(items, ctx=ctx)


# No retries for discovery: a listing error is the user's to fix.
discover_task = task(name="discover", **_OPTIONS)(discover_and_register)
transcribe_batch_task = task(name="transcribe-batch", **_OPTIONS)(claim_and_transcribe)
expected_files_task = task(name="expected-files", **_OPTIONS)(expected_files)
requeue_failures_task = task(name="requeue-failures", **_OPTIONS)(requeue_failed)
start_run_task = task(name="start-run", **_OPTIONS)(start_run)
finish_run_task = task(name="finish-run", **_OPTIONS)(finish_run)
