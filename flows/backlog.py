"""The nightly flow: discover a source, register its files, transcribe what is pending.

`run_backlog(run)` is the plain body. Two flows wrap it: `transcribe_backlog`, the
deployment's entry point (`medasr serve`), bootstraps its Run from its parameters;
`backlog_flow(run)` is the same flow over the Run `medasr run` bootstrapped before
Prefect started (so nothing is parsed, read or opened twice).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from prefect import Flow, flow, get_run_logger
from prefect.client.schemas.objects import State

from audit.verify import anchor_line
from flows.deliver_step import deliver_after_backlog
from flows.prefect_runtime.head_start import HeadStart
from flows.reporting.run_names import name_from_parameters, run_name
from flows.reporting.states import final_state
from flows.reporting.summary import DeliveryCounts, RunSummary
from flows.setup.bootstrap import Run, backlog_request, bootstrap, settings_for
from flows.setup.listing import Listed, list_source
from flows.skeleton import FlowSteps, Prepared, run_flow_steps
from storage.errors import StoreError
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


@flow(
    name=FLOW_NAME,
    flow_run_name=name_from_parameters("backlog"),
    log_prints=False,
    validate_parameters=True,
)
async def transcribe_backlog(
    source: str,
    language: str | None = None,
    limit: int | None = None,
    concurrency: int | None = None,
    encrypt: bool | None = None,
    batch_size: int | None = None,
    include: list[str] | None = None,
    exclude: list[str] | None = None,
    manifest: str | None = None,
    max_audio_hours: float | None = None,
) -> State[Any]:
    """Transcribe every new or changed file under `source`; ends in the state its summary
    says (flows/reporting/states.py), the summary its data.

    With MEDASR_DELIVER=true, done transcripts are then delivered (flows/deliver_step.py).
    `max_audio_hours`: the run's audio cap (MEDASR_PIPELINE__MAX_AUDIO_HOURS_PER_RUN).
    """
    request = backlog_request(
        source=source,
        language=language,
        limit=limit,
        concurrency=concurrency,
        encrypt=encrypt,
        batch_size=batch_size,
        include=include,
        exclude=exclude,
        manifest=manifest,
        max_audio_hours=max_audio_hours,
    )
    with bootstrap(settings_for(request), request) as run:
        summary = await run_backlog(run)
        _log_anchor(run)
        return final_state(summary)


def _log_anchor(run: Run) -> None:
    """Each night's log holds the trail's anchor: a site has one without taking it."""
    try:
        get_run_logger().info("%s", anchor_line(run.store))
    except StoreError as exc:  # the night's work is done; the anchor waits a night
        get_run_logger().warning("no audit anchor tonight: %s", exc.message)


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
