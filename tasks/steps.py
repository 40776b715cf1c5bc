"""The Prefect tasks: thin wrappers that declare names, tags and caching around plain functions.

A task run handles a batch of files, never one file: each task run costs ~5-10 ms in
the client and ~30 ms of server work, and backlogs reach 100,000 files.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from prefect import task
from prefect.cache_policies import NONE

from storage.database import Store
from tasks.discover import Discovery, discover_and_register
from tasks.progress import FileOutcome
from tasks.runs import expected_files, finish_run, requeue_failed, start_run
from tasks.store_calls import in_store
from tasks.transcribe import BatchContext, process_batch

_TAGS = ["medasr"]


@task(name="discover", tags=_TAGS, cache_policy=NONE, persist_result=False)
def discover_task(
    *,
    source: str,
    language: str,
    store: Store,
    settle_s: float,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    storage_options: Mapping[str, Any] | None = None,
    manifest: str | None = None,
) -> Discovery:
    """List the source and register its files (no retries: a listing error is the user's)."""
    return discover_and_register(
        source=source,
        language=language,
        store=store,
        settle_s=settle_s,
        include=include,
        exclude=exclude,
        storage_options=storage_options,
        manifest=manifest,
    )


@task(name="transcribe-batch", tags=_TAGS, cache_policy=NONE, persist_result=False)
async def transcribe_batch_task(
    *, ctx: BatchContext, language: str | None, max_files: int, source_prefix: str | None
) -> list[FileOutcome]:
    """Claim up to `max_files` items under a lease and transcribe them; [] when none are left."""
    items = await in_store(  # in a thread: the other batch loop has requests in flight
        ctx.store,
        lambda repo: repo.claim_batch(
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


@task(name="expected-files", tags=_TAGS, cache_policy=NONE, persist_result=False)
def expected_files_task(
    *, store: Store, language: str | None, source_prefix: str | None, limit: int | None
) -> int:
    """How many files the drain expects to do (dead local leases are taken back first)."""
    return expected_files(store, language=language, source_prefix=source_prefix, limit=limit)


@task(name="requeue-failures", tags=_TAGS, cache_policy=NONE, persist_result=False)
def requeue_failures_task(
    *,
    store: Store,
    language: str | None,
    max_attempts: int,
    include_permanent: bool,
    include_skipped: bool = False,
) -> int:
    """Send the failures that may succeed now (or all, with include_permanent; skipped
    recordings too, with include_skipped) to pending."""
    return requeue_failed(
        store,
        language=language,
        max_attempts=max_attempts,
        include_permanent=include_permanent,
        include_skipped=include_skipped,
    )


@task(name="start-run", tags=_TAGS, cache_policy=NONE, persist_result=False)
def start_run_task(*, store: Store, source: str, language: str) -> int:
    """Record the start of a run in the store; returns its id."""
    return start_run(store, source=source, language=language)


@task(name="finish-run", tags=_TAGS, cache_policy=NONE, persist_result=False)
def finish_run_task(*, store: Store, run_id: int, counts: Mapping[str, int], status: str) -> None:
    """Record the end of a run with its status and counts."""
    finish_run(store, run_id, counts=counts, status=status)
