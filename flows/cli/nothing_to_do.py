"""A run or rerun with nothing to claim says so and ends without waiting for Prefect.

Prefect's temporary server takes seconds to start; a command that will claim nothing
need not wait for it (with a long-running server the flow still runs: its night
artifact lists the problems still open). After the source is listed and registered (a
run) or the due failures are re-queued (a rerun), the store is asked: nothing pending
and nothing processing (a lease that may have lapsed is work too) means nothing to do.
"""

from __future__ import annotations

from typing import NoReturn

import typer

from flows.cli.console import print_summary
from flows.prefect_runtime.prefect_api import PrefectApi
from flows.reporting.summary import RunSummary
from flows.setup.bootstrap import Run
from flows.setup.listing import Listed
from storage.errors import StoreError
from storage.records import ItemStatus


def nothing_to_claim(run: Run, *, listed: Listed | None = None) -> bool:
    """True when the run would claim nothing: no item pending or processing (of its
    language, under its source), and a listing that found nothing to report."""
    if listed is not None:
        if listed.discovery is None:
            return False  # listing failed: the flow says why
        if listed.discovery.unreadable or listed.discovery.not_listed:
            return False  # the flow's summary reports them
    language = run.claim_language
    try:
        with run.store.unit_of_work(read_only=True) as uow:
            if uow.item_queries.pending_count(language=language, source_prefix=run.source_prefix):
                return False
            counts = uow.item_queries.status_counts()
    except StoreError:
        return False  # the flow records what the store says
    return not any(
        c.status == ItemStatus.PROCESSING and language in (None, c.language) for c in counts
    )


def end_with_nothing_to_do(
    api: PrefectApi, *, title: str, listed: Listed | None, requeued: int | None, store: str
) -> NoReturn:
    """Stop the temporary server, print the run's usual table (all zeros but what was
    listed), say there was nothing to do, exit 0."""
    api.stop()
    discovery = listed.discovery if listed is not None else None
    summary = RunSummary(
        files_listed=None if discovery is None else discovery.listed,
        files_not_listed=None if discovery is None else discovery.not_listed,
        files_unreadable=None if discovery is None else discovery.unreadable,
        not_audio_ignored=None if discovery is None else discovery.ignored.count,
        requeued=requeued,
    )
    print_summary(summary, title=title, store=store)
    what = "no new, changed or pending recordings" if listed is not None else "no failure is due"
    typer.echo(f"medasr: nothing to do: {what} (Prefect was not started)")
    raise typer.Exit(summary.exit_code)
