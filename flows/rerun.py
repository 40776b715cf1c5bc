"""The failure flow: re-queue failures that may succeed now, then transcribe them."""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger

from flows.backlog import settings_for_run
from flows.drain import drain_pending
from flows.summary import publish_summary, summarize
from storage.database import Store


@flow(name="rerun-failures", log_prints=False, validate_parameters=True)
async def rerun_failures(
    language: str | None = None,
    include_permanent: bool = False,
    concurrency: int | None = None,
) -> dict[str, Any]:
    """Re-queue due retryable failures under the attempts budget and process them."""
    settings = settings_for_run(language=language, concurrency=concurrency)
    logger = get_run_logger()
    store = Store.open(settings.storage)
    try:
        with store.repository() as repo:
            requeued = repo.requeue_failures(
                language=language,
                max_attempts=settings.service.max_attempts,
                include_permanent=include_permanent,
            )
        logger.info("re-queued %d failed items", requeued)
        result = await drain_pending(settings=settings, store=store, language=language)
    finally:
        store.dispose()
    summary = summarize(result)
    summary["requeued"] = requeued
    await publish_summary(summary, title="medasr rerun of failures")
    if result.stopped is not None:
        raise result.stopped
    return summary
