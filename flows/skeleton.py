"""The one skeleton of the backlog and rerun flows: record the run, prepare, drain, finish.

What differs between the two is what happens before the drain (list and register a
source, or re-queue failures) and after it (delivery); both come in as callables. It
returns the run's `RunSummary` whatever ended the run; nothing is raised to carry it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from flows.drain import drain_pending
from flows.prefect_runtime.head_start import HeadStart
from flows.prefect_runtime.run_logs import logs_to_prefect
from flows.reporting.artifacts import publish_summary
from flows.reporting.run_names import tag_flow_run
from flows.reporting.run_record import recorded_run
from flows.reporting.summary import DeliveryCounts, RunSummary, summarize
from flows.setup.bootstrap import Run
from storage.accuracy_records import AccuracyFilter
from tasks.discovery.discover import Discovery
from tasks.transcription.audio_budget import left_for_next_run


@dataclass(frozen=True)
class Prepared:
    """What the step before the drain did, for the summary."""

    discovery: Discovery | None = None
    requeued: int | None = None


@dataclass(frozen=True)
class FlowSteps:
    """The parts of a flow around its drain."""

    title: str
    prepare: Callable[[Run], Prepared]
    after: Callable[[Run], Awaitable[DeliveryCounts | None]] | None = None  # if not stopped
    head_start: HeadStart | None = None  # the drain begun while Prefect started


async def run_flow_steps(run: Run, steps: FlowSteps) -> RunSummary:
    """Run one flow's steps on its bootstrapped run; returns the summary (stopped or not).

    medasr's log lines go to the flow run's logs too while it runs
    (flows/prefect_runtime/run_logs.py).
    """
    with logs_to_prefect(level=run.settings.pipeline.log_level):
        await tag_flow_run(run)
        return await _recorded_steps(run, steps)


async def _recorded_steps(run: Run, steps: FlowSteps) -> RunSummary:
    async with recorded_run(
        run.store, source=run.record_source, language=run.record_language
    ) as record:
        # In a thread: listing is a sync task run (see flows/reporting/run_record.py).
        prepared = await asyncio.to_thread(steps.prepare, run)
        result = await drain_pending(run, head_start=steps.head_start)
        record.summary = summarize(
            result,
            discovery=prepared.discovery,
            requeued=prepared.requeued,
            source_roots=run.source_roots,
        )
        review = run.settings.review
        if review.required != "flagged" or review.effective_sample_rate() > 0:
            record.summary = _with_review_queue(run, record.summary)
        record.summary = _with_reviewed_day(run, record.summary)
        if run.audio_budget is not None and run.audio_budget.reached:
            record.summary = _with_budget_left(run, record.summary)
        if result.stopped is None and steps.after is not None:
            delivery = await steps.after(run)
            if delivery is not None:
                record.summary = record.summary.with_delivery(delivery)
        summary = record.summary
    await publish_summary(run, summary, title=steps.title)
    return summary


def _with_reviewed_day(run: Run, summary: RunSummary) -> RunSummary:
    """The word accuracy of the notes reviewed in the 24 hours before the run's summary."""
    now = datetime.now(UTC)
    with run.store.unit_of_work(read_only=True) as uow:
        rows = uow.accuracy.note_figures(AccuracyFilter(since=now - timedelta(days=1)))
    return summary.with_reviewed([note for note, _ in rows])


def _with_budget_left(run: Run, summary: RunSummary) -> RunSummary:
    """The audio cap stopped the claims: the summary says what is left for the next run."""
    assert run.audio_budget is not None
    left = left_for_next_run(
        run.store,
        run.audio_budget,
        language=run.claim_language,
        source_prefix=run.source_prefix,
    )
    return summary.with_budget_left(left)


def _with_review_queue(run: Run, summary: RunSummary) -> RunSummary:
    """Every transcript waits for a person: the summary says how many and since when."""
    with run.store.unit_of_work(read_only=True) as uow:
        queue = uow.reviews.queue_size()
    return summary.with_review_queue(queue, now=datetime.now(UTC))
