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
from tasks.transcribe import BatchContext, process_batch


@task(name="discover", tags=["medasr"], cache_policy=NONE, persist_result=False)
def discover_task(
    *,
    source: str,
    language: str,
    store: Store,
    settle_s: float,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    storage_options: Mapping[str, Any] | None = None,
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
    )


@task(name="transcribe-batch", tags=["medasr"], cache_policy=NONE, persist_result=False)
async def transcribe_batch_task(
    *, ctx: BatchContext, language: str | None, max_files: int, source_prefix: str | None
) -> list[FileOutcome]:
    """Claim up to `max_files` items under a lease and transcribe them; [] when none are left."""
    with ctx.store.repository() as repo:
        items = repo.claim_batch(
            owner=ctx.owner,
            language=language,
            limit=max_files,
            lease_s=ctx.lease_s,
            source_prefix=source_prefix,
        )
    if not items:
        return []
    return await process_batch(items, ctx=ctx)
