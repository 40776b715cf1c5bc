"""The one skeleton of the backlog and rerun flows: record the run, prepare, drain, finish.

What differs between the two is what happens before the drain (list and register a
source, or re-queue failures) and after it (delivery); both come in as callables.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from config.errors import ConfigError
from flows.drain import DrainResult, drain_pending
from flows.run_context import RunContext, RunRequest, run_context_for
from flows.run_record import recorded_run
from flows.summary import publish_summary, stopped_with, summarize
from service.errors import CredentialsRejected
from tasks.discovery.discover import Discovery


@dataclass(frozen=True)
class Prepared:
    """What the step before the drain did, for the summary."""

    discovery: Discovery | None = None
    requeued: int | None = None


@dataclass(frozen=True)
class FlowSteps:
    """The parts of a flow around its drain."""

    title: str
    prepare: Callable[[RunContext], Prepared]
    after: Callable[[RunContext], Awaitable[dict[str, Any]]] | None = None  # if not stopped
    limit: int | None = None


async def run_flow_steps(request: RunRequest, steps: FlowSteps) -> dict[str, Any]:
    """Run one flow's steps on its run context (the CLI's, else built here); returns the
    summary, raises what stopped the run (credentials, a setting)."""
    with (
        run_context_for(request) as run,
        recorded_run(run.store, source=run.record_source, language=run.record_language) as record,
    ):
        prepared = steps.prepare(run)
        result = await drain_pending(run, limit=steps.limit)
        record.summary = summarize(
            result,
            discovery=prepared.discovery,
            requeued=prepared.requeued,
            source_roots=run.source_roots,
        )
        if result.stopped is None and steps.after is not None:
            record.summary |= await steps.after(run)
    return await finish(record.summary, result, title=steps.title)


async def finish(summary: dict[str, Any], result: DrainResult, *, title: str) -> dict[str, Any]:
    """Publish the summary artifact; raise what stopped the run (credentials, a setting)."""
    await publish_summary(summary, title=title)
    if isinstance(result.stopped, CredentialsRejected):
        raise stopped_with(summary, result.stopped)
    if isinstance(result.stopped, ConfigError):  # the CLI exits 2 with its one line
        raise result.stopped
    return summary  # finished, or interrupted: the summary says which (exit code 130)
