"""Claiming a batch of pending items under the run's lease: plain, no Prefect."""

from __future__ import annotations

from storage.records import ItemRecord
from tasks.transcription.batch import BatchContext
from tasks.work.store_calls import in_store


async def claim_batch(
    *, ctx: BatchContext, language: str | None, max_files: int, source_prefix: str | None
) -> list[ItemRecord]:
    """Claim up to `max_files` items under a lease; [] when none are left.

    Not a task: a claim that finds nothing leaves no task run behind, and the batch task
    is named by what it claimed (flows/drain.py). Raises StoreError.
    """
    return await in_store(  # in a thread: the other batch loop has requests in flight
        ctx.store,
        lambda uow: uow.claims.claim_batch(
            owner=ctx.owner,
            language=language,
            limit=max_files,
            lease_s=ctx.lease_s,
            source_prefix=source_prefix,
        ),
    )
