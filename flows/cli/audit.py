"""`medasr audit` (read the trail) and `medasr audit verify` (check its hash chain).

Reading is not itself recorded, though paths are recording names (PHI): the command line
is used by whoever can open the database itself (docs/audit.md, "Which reads are
recorded"); writing the trail out as jsonl or csv is an export, recorded as an
`audit_exported` event after the rows are written. `verify` exits 0 when the chain is
whole, 1 naming the first event that does not match (or an anchor the chain no longer
holds), 2 for a bad option.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import Annotated

import typer

from audit import AuditAction, command_actor, record_event
from audit.filters import audit_filter
from audit.report import TrailFormat, write_events
from audit.verify import checked_anchor, verify_trail
from config.errors import EXIT_SOME_FAILED, ConfigError
from config.settings import load_settings
from flows.cli.error_exits import command_errors
from storage import open_store
from storage.audit_records import AuditEvent
from storage.database import database_exists
from storage.interface import UnitOfWorkFactory

audit_app = typer.Typer(invoke_without_command=True)


@audit_app.callback()
def audit_command(
    ctx: typer.Context,
    since: Annotated[
        str | None, typer.Option("--since", help="Events at or after DATE (ISO, UTC).")
    ] = None,
    until: Annotated[
        str | None, typer.Option("--until", help="Events before DATE's end (ISO, UTC).")
    ] = None,
    user: Annotated[
        str | None,
        typer.Option("--user", help="Events by NAME (a reviewer, or an OS user of a command)."),
    ] = None,
    item: Annotated[int | None, typer.Option("--item", help="Events about item ID.")] = None,
    action: Annotated[str | None, typer.Option("--action", help="Events of action A.")] = None,
    trail_format: Annotated[
        TrailFormat,
        typer.Option("--format", help="table (default), jsonl or csv (an export: recorded)."),
    ] = TrailFormat.table,
) -> None:
    """Read the audit trail (who saw, changed, sent or removed which recording);
    `medasr audit verify` checks its hash chain.

    Oldest first. --since and --until take ISO dates or times (UTC unless they say);
    --until DAY includes that day. jsonl and csv are exports of the trail, recorded as
    an `audit_exported` event.
    """
    if ctx.invoked_subcommand is not None:
        return
    with command_errors():
        selection = audit_filter(since=since, until=until, user=user, item_id=item, action=action)
        store = _open_store()
        unreadable: list[AuditEvent] = []
        try:
            with store.unit_of_work(read_only=True) as uow:
                events = _readable(uow.audit.events(selection), unreadable=unreadable)
                count = write_events(events, sys.stdout, trail_format=trail_format)
            if trail_format is not TrailFormat.table:
                _record_export(store, count=count, trail_format=trail_format, ctx=ctx)
        finally:
            store.dispose()
    typer.echo(f"{count} event(s)", err=True)
    for event in unreadable:
        typer.echo(
            f"medasr: event {event.seq} cannot be read ({event.unreadable}); left out, "
            "`medasr audit verify` names it",
            err=True,
        )
    if unreadable:
        raise typer.Exit(EXIT_SOME_FAILED)


def _readable(
    events: Iterable[AuditEvent], *, unreadable: list[AuditEvent]
) -> Iterator[AuditEvent]:
    """The events that can be read; the others are kept in `unreadable` to be named."""
    for event in events:
        if event.unreadable is None:
            yield event
        else:
            unreadable.append(event)


@audit_app.command("verify")
def verify_command(
    anchor: Annotated[
        bool,
        typer.Option("--anchor", help="Print only the newest hash, to keep outside the database."),
    ] = False,
    since_anchor: Annotated[
        str | None,
        typer.Option("--since-anchor", help="Also check the chain still holds this hash."),
    ] = None,
) -> None:
    """Walk the audit trail's hash chain: exit 0 whole, 1 naming the first event that
    does not match."""
    with command_errors():
        if anchor and since_anchor:
            raise ConfigError("--anchor and --since-anchor: choose one")
        wanted = checked_anchor(since_anchor) if since_anchor else None
        store = _open_store()
        try:
            verdict = verify_trail(store, since_anchor=wanted)
        finally:
            store.dispose()
    if not verdict.whole:
        typer.echo(verdict.sentence())
        raise typer.Exit(EXIT_SOME_FAILED)
    if anchor:
        typer.echo(verdict.report.newest_hash)
        typer.echo(f"{verdict.report.events} event(s), chain whole", err=True)
        return
    typer.echo(verdict.sentence())


def _open_store() -> UnitOfWorkFactory:
    storage = load_settings().storage
    if not database_exists(storage.database_url):
        raise ConfigError(f"no database at {storage.database_url_redacted}: no audit trail yet")
    return open_store(storage)


def _record_export(
    store: UnitOfWorkFactory, *, count: int, trail_format: TrailFormat, ctx: typer.Context
) -> None:
    """The trail left medasr as a file: one event with what was asked and how many."""
    asked = {k: str(v)[:64] for k, v in ctx.params.items() if v is not None and k != "trail_format"}
    with store.unit_of_work() as uow:
        record_event(
            uow,
            action=AuditAction.AUDIT_EXPORTED,
            actor=command_actor(),
            target=trail_format.value,
            detail={"events": count, "format": trail_format.value, **asked},
        )
