"""The failure flow: re-queue failures that may succeed now, then transcribe them.

`run_rerun(run, ...)` is the plain body; `rerun_failures` (the deployment's flow)
bootstraps its Run from its parameters, `rerun_flow(run, ...)` wraps the Run
`medasr rerun-failures` built.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from prefect import Flow, flow, get_run_logger
from prefect.client.schemas.objects import State

from flows.prefect_runtime.head_start import HeadStart
from flows.reporting.run_names import name_from_parameters, run_name
from flows.reporting.states import final_state
from flows.reporting.summary import RunSummary
from flows.setup.bootstrap import (
    ANY_LANGUAGE,
    RERUN_SOURCE,
    Run,
    RunRequest,
    bootstrap,
    settings_for,
)
from flows.skeleton import FlowSteps, Prepared, run_flow_steps
from tasks.steps import requeue_failures_task

__all__ = ["ANY_LANGUAGE", "RERUN_SOURCE", "rerun_failures", "rerun_flow", "run_rerun"]
FLOW_NAME = "rerun-failures"


async def run_rerun(
    run: Run,
    *,
    include_permanent: bool,
    include_skipped: bool,
    requeued: int | None = None,
    head_start: HeadStart | None = None,
) -> RunSummary:
    """Re-queue due retryable failures under the attempts budget (or, with
    `include_permanent`, every failure; with `include_skipped`, skipped recordings too)
    and process them; returns the summary. `requeued`: the command re-queued them
    already, before its `head_start` (flows/prefect_runtime/head_start.py), which the
    drain carries on."""

    def prepare(run: Run) -> Prepared:
        count = requeued
        if count is None:
            count = requeue_failures_task(
                run.store,
                language=run.request.language,
                max_attempts=run.settings.service.max_attempts,
                include_permanent=include_permanent,
                include_skipped=include_skipped,
            )
        what = "failed or skipped" if include_skipped else "failed"
        get_run_logger().info("re-queued %d %s items", count, what)
        return Prepared(requeued=count)

    steps = FlowSteps(title="medasr rerun of failures", prepare=prepare, head_start=head_start)
    return await run_flow_steps(run, steps)


@flow(
    name=FLOW_NAME,
    flow_run_name=name_from_parameters("rerun"),
    log_prints=False,
    validate_parameters=True,
)
async def rerun_failures(
    language: str | None = None,
    include_permanent: bool = False,
    concurrency: int | None = None,
    include_skipped: bool = False,
    max_audio_hours: float | None = None,
) -> State[Any]:
    """Re-queue failures that may succeed now and transcribe them; ends in the state its
    summary says (flows/reporting/states.py)."""
    request = RunRequest(
        language=language, concurrency=concurrency, max_audio_hours=max_audio_hours
    )
    with bootstrap(settings_for(request), request) as run:
        summary = await run_rerun(
            run, include_permanent=include_permanent, include_skipped=include_skipped
        )
    return final_state(summary)


def rerun_flow(
    run: Run,
    *,
    include_permanent: bool,
    include_skipped: bool,
    requeued: int | None = None,
    head_start: HeadStart | None = None,
) -> Callable[[], Coroutine[Any, Any, Any]]:
    """`medasr rerun-failures`' flow: `rerun_failures`' name over a Run built by the command
    (which may have re-queued the failures already: `requeued`)."""

    async def rerun() -> State[Any]:
        summary = await run_rerun(
            run,
            include_permanent=include_permanent,
            include_skipped=include_skipped,
            requeued=requeued,
            head_start=head_start,
        )
        return final_state(summary)

    built: Flow[[], Coroutine[Any, Any, State[Any]]] = Flow(
        fn=rerun,
        name=FLOW_NAME,
        flow_run_name=run_name("rerun", run.request.language),
        log_prints=False,
        # No parameters to check: Prefect's check would import pydantic.v1 (40 ms) to
        # look for its models among none, while the run's first requests go out.
        validate_parameters=False,
    )
    return built
