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

from config.errors import EXIT_OK
from flows.bootstrap import Run
from flows.cli.console import print_table
from flows.listing import Listed
from flows.prefect_api import PrefectApi
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
    language = run.request.language
    try:
        with run.store.unit_of_work(read_only=True) as uow:
            if uow.items.pending_count(language=language, source_prefix=run.source_prefix):
                return False
            counts = uow.items.status_counts()
    except StoreError:
        return False  # the flow records what the store says
    return not any(
        c.status == ItemStatus.PROCESSING and language in (None, c.language) for c in counts
    )


def end_with_nothing_to_do(
    api: PrefectApi, *, title: str, listed: Listed | None, requeued: int | None
) -> NoReturn:
    """Stop the temporary server, print what was looked at, exit 0."""
    api.stop()
    rows: list[tuple[str, int]] = [("files_to_process", 0)]
    if listed is not None and listed.discovery is not None:
        discovery = listed.discovery
        rows = [
            ("files_listed", discovery.listed),
            ("files_new_or_changed", discovery.new + discovery.changed),
            ("not_audio_ignored", discovery.ignored.count),
            *rows,
        ]
    if requeued is not None:
        rows = [("requeued", requeued), *rows]
    print_table(rows, title=title)
    what = "no new, changed or pending recordings" if listed is not None else "no failure is due"
    typer.echo(f"medasr: nothing to do: {what} (Prefect was not started)")
    raise typer.Exit(EXIT_OK)
