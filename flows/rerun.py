"""The failure flow: re-queue failures that may succeed now, then transcribe them."""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger

from flows.run_context import ANY_LANGUAGE, RERUN_SOURCE, RunContext, RunRequest
from flows.skeleton import FlowSteps, Prepared, run_flow_steps
from tasks.steps import requeue_failures_task

__all__ = ["ANY_LANGUAGE", "RERUN_SOURCE", "rerun_failures"]


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

    def prepare(run: RunContext) -> Prepared:
        requeued = requeue_failures_task(
            run.store,
            language=language,
            max_attempts=run.settings.service.max_attempts,
            include_permanent=include_permanent,
            include_skipped=include_skipped,
        )
        what = "failed or skipped" if include_skipped else "failed"
        get_run_logger().info("re-queued %d %s items", requeued, what)
        return Prepared(requeued=requeued)

    request = RunRequest(language=language, concurrency=concurrency)
    return await run_flow_steps(
        request, FlowSteps(title="medasr rerun of failures", prepare=prepare)
    )
