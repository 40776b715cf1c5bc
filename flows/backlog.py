"""The nightly flow: discover a source, register its files, transcribe what is pending."""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger

from flows.deliver_step import deliver_after_backlog
from flows.run_context import RunContext, RunRequest
from flows.skeleton import FlowSteps, Prepared, run_flow_steps
from tasks.discovery.discover import Discovery
from tasks.steps import discover_task


@flow(name="transcribe-backlog", log_prints=False, validate_parameters=True)
async def transcribe_backlog(
    source: str,
    language: str,
    limit: int | None = None,
    concurrency: int | None = None,
    encrypt: bool | None = None,
    batch_size: int | None = None,
    include: list[str] | None = None,
    exclude: list[str] | None = None,
    manifest: str | None = None,
) -> dict[str, Any]:
    """Transcribe every new or changed file under `source`; returns the run summary.

    With MEDASR_DELIVER=true, done transcripts are then delivered (flows/deliver_step.py).
    """
    request = RunRequest(
        language=language,
        source=source,
        concurrency=concurrency,
        encrypt=encrypt,
        batch_size=batch_size,
    )

    def prepare(run: RunContext) -> Prepared:
        return Prepared(
            discovery=discover(
                run,
                source=source,
                language=language,
                include=include,
                exclude=exclude,
                manifest=manifest,
            )
        )

    async def deliver(run: RunContext) -> dict[str, Any]:
        if not run.settings.delivery.enabled:
            return {}
        return await deliver_after_backlog(run.settings, run.store, language=language)

    steps = FlowSteps(
        title=f"medasr backlog run ({language})", prepare=prepare, after=deliver, limit=limit
    )
    return await run_flow_steps(request, steps)


def discover(
    run: RunContext,
    *,
    source: str,
    language: str,
    include: list[str] | None,
    exclude: list[str] | None,
    manifest: str | None,
) -> Discovery:
    """List and register the source (a Prefect task), unless the command did it while
    Prefect started; say what was found."""
    if run.listed is not None:
        discovery = run.listed.result()
    else:
        discovery = discover_task(
            source=source,
            language=language,
            store=run.store,
            settle_s=run.settings.pipeline.settle_s,
            include=include or (),
            exclude=exclude or (),
            manifest=manifest,
        )
    get_run_logger().info(
        "listed %d files (%d new, %d changed, %d not listed, %d unreadable)",
        discovery.listed,
        discovery.new,
        discovery.changed,
        discovery.not_listed,
        discovery.unreadable,
    )
    return discovery
