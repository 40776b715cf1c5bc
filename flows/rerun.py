"""The failure flow: re-queue failures that may succeed now, then transcribe them."""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger

from flows.backlog import finish, settings_for_run
from flows.drain import drain_pending
from flows.run_record import recorded_run
from flows.summary import summarize
from storage.database import Store
from tasks.runs import known_sources
from tasks.steps import requeue_failures_task

# What the run row names as the source and language of a rerun over every source.
RERUN_SOURCE = "(failures)"
ANY_LANGUAGE = "*"


@flow(name="rerun-failures", log_prints=False, validate_parameters=True)
async def rerun_failures(
    language: str | None = None,
    include_permanent: bool = False,
    concurrency: int | None = None,
    include_skipped: bool = False,
) -> dict[str, Any]:
    """Re-queue due retryable failures under the attempts budget (or, with
    `include_permanent`, every failure; with `include_skipped`, skipped recordings too)
    and process them."""
    settings = settings_for_run(language=language, concurrency=concurrency)
    store = Store.open(settings.storage)
    try:
        with recorded_run(store, source=RERUN_SOURCE, language=language or ANY_LANGUAGE) as run:
            requeued = requeue_failures_task(
                store=store,
                language=language,
                max_attempts=settings.service.max_attempts,
                include_permanent=include_permanent,
                include_skipped=include_skipped,
            )
            what = "failed or skipped" if include_skipped else "failed"
            get_run_logger().info("re-queued %d %s items", requeued, what)
            roots = known_sources(store)
            result = await drain_pending(
                settings=settings, store=store, language=language, source_roots=roots
            )
            run.summary = summarize(result, requeued=requeued, source_roots=roots)
    finally:
        store.dispose()
    return await finish(run.summary, result, title="medasr rerun of failures")
