"""The backlog run's plain body, and `medasr run`'s flow over it.

`run_backlog(run)` lists and registers the source, transcribes what is pending and
delivers with MEDASR_DELIVER=true. `backlog_flow(run)` is the flow `medasr run` runs over
the Run it bootstrapped before Prefect started (so nothing is parsed, read or opened
twice). The deployment's flow, `transcribe_backlog`, wraps the same body in
flows/backlog.py: a decorated flow's parameter schema is built when its module is
imported (60 ms of CPU, with pydantic.v1 imported for it), which `medasr run` would pay
at its busiest moment, its first requests, for a flow it never calls.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from prefect import Flow, get_run_logger
from prefect.client.schemas.objects import State

from flows.deliver_step import deliver_after_backlog
from flows.prefect_runtime.head_start import HeadStart
from flows.reporting.run_names import run_name
from flows.reporting.states import final_state
from flows.reporting.summary import DeliveryCounts, RunSummary
from flows.setup.bootstrap import Run
from flows.setup.listing import Listed, list_source
from flows.skeleton import FlowSteps, Prepared, run_flow_steps
from tasks.discovery.discover import Discovery
from tasks.steps import discover_task

FLOW_NAME = "transcribe-backlog"


async def run_backlog(
    run: Run, *, listed: Listed | None = None, head_start: HeadStart | None = None
) -> RunSummary:
    """List and register the run's source (unless `listed`), transcribe what is pending
    (carrying on `head_start`), deliver with MEDASR_DELIVER=true; returns the summary."""
    language = run.claim_language  # None: the manifest names each recording's language
    assert run.source is not None, "a backlog run has a source"

    def prepare(run: Run) -> Prepared:
        return Prepared(discovery=discover(run, listed=listed))

    async def deliver(run: Run) -> DeliveryCounts | None:
        if not run.settings.delivery.enabled:
            return None
        return await deliver_after_backlog(run.settings, run.store, language=language)

    steps = FlowSteps(
        title=f"medasr backlog run ({language or 'every language'})",
        prepare=prepare,
        after=deliver,
        head_start=head_start,
    )
    return await run_flow_steps(run, steps)


def backlog_flow(
    run: Run, *, listed: Listed | None = None, head_start: HeadStart | None = None
) -> Callable[[], Coroutine[Any, Any, Any]]:
    """`medasr run`'s flow: `transcribe_backlog`'s name over a Run built by the command.

    It takes no parameters: the Run holds the token and an open store, which Prefect
    must not record.
    """

    async def backlog() -> State[Any]:
        return final_state(await run_backlog(run, listed=listed, head_start=head_start))

    built: Flow[[], Coroutine[Any, Any, State[Any]]] = Flow(
        fn=backlog,
        name=FLOW_NAME,
        flow_run_name=run_name("backlog", run.claim_language),
        log_prints=False,
        # No parameters to check: Prefect's check would import pydantic.v1 (40 ms) to
        # look for its models among none, while the run's first requests go out.
        validate_parameters=False,
    )
    return built


def discover(run: Run, *, listed: Listed | None) -> Discovery:
    """List and register the source (a Prefect task), unless the command did it while
    Prefect started; say what was found."""
    discovery = listed.result() if listed is not None else list_source(run, lister=discover_task)
    get_run_logger().info(
        "listed %d files (%d new, %d changed, %d not listed, %d unreadable)",
        discovery.listed,
        discovery.new,
        discovery.changed,
        discovery.not_listed,
        discovery.unreadable,
    )
    return discovery
