"""`medasr status`, `medasr db upgrade`: the store seen from the command line.

Configuration problems exit 2 with one line, an unreachable or locked database exits 1
(flows/cli/error_exits.py); `medasr export` is flows/cli/export.py. Transcripts are
never printed by `status` (only counts and error messages). Recordings are named by
their path relative to the source of a recorded run, and everything printed is escaped
onto one line (`one_line`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from audit import AuditAction
from config.errors import ConfigError
from config.settings import StorageSettings, load_settings
from flows.cli.console import print_store
from flows.cli.error_exits import command_errors
from flows.cli.spend import SpendFormat, print_spend
from flows.prefect_runtime.next_nightly import next_nightly_line
from storage import open_review_store
from storage.audit_records import AuditEvent
from storage.database import database_exists, upgrade_database
from storage.records import (
    ITEM_STATUSES,
    DeliveryCount,
    ItemRecord,
    ItemStatus,
    NotAudioListing,
    QueueSize,
    StatusCount,
)
from storage.review_interface import ReviewUnitOfWork
from tasks.discovery.recording_names import one_line, reason_about, recording_name

db_app = typer.Typer(help="Database schema commands.", no_args_is_help=True)

_MS_PER_HOUR = 3_600_000
# Statuses a person should look at, most urgent first, each listed in its own section
# (those the schema knows: needs_review arrives with the quality gate).
_TO_CHECK: tuple[str, ...] = tuple(
    s for s in ("failed", "needs_review", "skipped") if s in ITEM_STATUSES
)
_SECTION_TITLES = {"failed": "latest failures", "needs_review": "latest needing review"}
_SKIPPED_HINT = "skipped recordings: `medasr rerun-failures --include-skipped` re-queues them"


def print_status(storage: StorageSettings, *, failures: int = 10) -> None:
    """Print counts by status and language, audio hours done, and the latest `failures`
    failed, skipped (and needing review) items, a section each.

    Rich tables on a terminal, tab-separated lines otherwise. Raises StoreError kinds.
    """
    if not database_exists(storage.database_url):
        where = storage.database_url_redacted
        typer.echo(f"nothing recorded yet (no database at {where})")
        print_store(storage.store_location, err=True)
        return
    store = open_review_store(storage)
    try:
        with store.unit_of_work(read_only=True) as uow:
            found = _read_status(uow, failures=failures)
    finally:
        store.dispose()
    console = Console()
    if console.is_terminal:
        _print_rich(console, found.counts, found.latest, roots=found.roots)
        _print_deliveries_rich(console, found.deliveries)
    else:
        _print_plain(found.counts, found.latest, roots=found.roots)
        _print_deliveries_plain(found.deliveries)
    if found.last_purge is not None:  # a line for a person; stdout stays the tables
        typer.echo(_retention_line(found.counts, found.last_purge), err=True)
    for line in _not_audio_lines(found.not_audio):  # for a person; stdout stays the tables
        typer.echo(line, err=True)
    if found.queue.waiting or found.corrected:
        typer.echo(_review_line(found.queue, corrected=found.corrected))
    print_store(storage.store_location, err=True)  # for a person; stdout stays the tables


@dataclass(frozen=True)
class _Status:
    """What `status` prints, read in one unit of work."""

    queue: QueueSize
    corrected: int
    counts: list[StatusCount]
    deliveries: list[DeliveryCount]
    latest: dict[str, list[ItemRecord]]
    roots: list[str]
    not_audio: list[NotAudioListing]
    last_purge: AuditEvent | None


def _read_status(uow: ReviewUnitOfWork, *, failures: int) -> _Status:
    return _Status(
        queue=uow.reviews.queue_size(),
        corrected=uow.reviews.corrected_count(),
        counts=uow.item_queries.status_counts(),
        deliveries=uow.deliveries.delivery_counts_by_target(),
        latest={
            status: uow.item_queries.list_latest(status=status, limit=failures) if failures else []
            for status in _TO_CHECK
        },
        roots=uow.runs.run_sources(),
        not_audio=uow.listings.not_audio(),
        last_purge=uow.audit.newest_event(action=AuditAction.PURGED),
    )


def _not_audio_lines(listings: list[NotAudioListing]) -> list[str]:
    """What the latest listing of each source ignored as not audio: how many, why, the
    rule, and the first names relative to the source (the source's path only when there
    are several, to tell them apart)."""
    lines = []
    for listing in listings:
        reasons = ", ".join(f"{reason}: {n}" for reason, n in sorted(listing.by_reason.items()))
        under = f" under {one_line(listing.source)}" if len(listings) > 1 else ""
        lines.append(
            f"not audio, ignored: {listing.count} ({reasons}){under} in the latest listing "
            f"({listing.listed_at.isoformat(timespec='seconds')}); the rule, by name: "
            "documents, data, images, scripts, checksums, partial copies, system files "
            "(docs/sources.md):"
        )
        lines.extend(f"  {one_line(name)}" for name in listing.names)
        if listing.count > len(listing.names):
            lines.append(f"  and {listing.count - len(listing.names)} more")
    return lines


def _review_line(queue: QueueSize, *, corrected: int) -> str:
    """What waits for a person and what people corrected, one line."""
    oldest = ""
    if queue.oldest is not None:
        oldest = f" (oldest since {queue.oldest.isoformat(timespec='seconds')})"
    return f"review: {queue.waiting} waiting{oldest}, {corrected} corrected"


def _retention_line(counts: list[StatusCount], last_purge: AuditEvent) -> str:
    """How many recordings are purged and the retention the last purge applied."""
    purged = sum(c.items for c in counts if c.status == ItemStatus.PURGED)
    detail = last_purge.detail or {}
    when = last_purge.occurred_at.isoformat(timespec="seconds")
    return (
        f"purged recordings: {purged}; retention in force: {detail.get('older_than', '?')} "
        f"(last purge {when}, by {one_line(last_purge.actor)})"
    )


def status_command(
    failures: Annotated[
        int,
        typer.Option(
            "--failures", min=0, help="How many of the latest failed (and skipped) items to list."
        ),
    ] = 10,
    by: Annotated[
        str | None,
        typer.Option(
            "--by",
            metavar="COLUMN",
            help="Cost per value of a manifest column, `language` or `month` (of finishing).",
        ),
    ] = None,
    since: Annotated[
        str | None, typer.Option("--since", help="With --by: finished at or after DATE (UTC).")
    ] = None,
    until: Annotated[
        str | None, typer.Option("--until", help="With --by: finished up to DATE (UTC).")
    ] = None,
    language: Annotated[
        str | None, typer.Option("--language", "-l", help="With --by: only this language.")
    ] = None,
    output: Annotated[
        SpendFormat, typer.Option("--format", help="With --by: table, csv or jsonl.")
    ] = SpendFormat.table,
) -> None:
    """Show items by status and language, audio hours done, the latest failed and skipped,
    deliveries by status, and the files each source's latest listing ignored as not audio.

    With --by: recordings done, audio hours, requests, billed minutes and estimated cost
    per value of a column."""
    with command_errors():
        if by is not None:
            settings = load_settings()
            print_spend(
                settings, column=by.strip(), since=since, until=until, language=language,
                output=output,
            )  # fmt: skip
            return
        if since or until or language or output is not SpendFormat.table:
            raise ConfigError("--since, --until, --language and --format go with --by COLUMN")
        print_status(load_settings().storage, failures=failures)
    nightly = next_nightly_line()
    if nightly is not None:
        typer.echo(nightly)


def _audio_hours(counts: list[StatusCount], status: str) -> float:
    return sum(c.audio_ms for c in counts if c.status == status) / _MS_PER_HOUR


def _section_title(status: str) -> str:
    return _SECTION_TITLES.get(status, f"latest {status.replace('_', ' ')}")


def _named(item: ItemRecord, *, roots: list[str]) -> tuple[str, str]:
    """The item's recording name and error message, escaped, relative to its source."""
    uri = item.source_uri
    return recording_name(uri, roots=roots), reason_about(item.error_message, uri=uri, roots=roots)


def _retry_cell(item: ItemRecord, *, plain: bool) -> str:
    if item.status != "failed":
        return item.status
    if plain:
        return "retryable" if item.retryable else "permanent"
    return "yes" if item.retryable else "no"


def _print_rich(
    console: Console,
    counts: list[StatusCount],
    latest: dict[str, list[ItemRecord]],
    *,
    roots: list[str],
) -> None:
    table = Table(title="Items")
    for name, justify in (("Language", "left"), ("Status", "left"), ("Items", "right"),
                          ("Audio h", "right")):  # fmt: skip
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for c in counts:
        table.add_row(c.language, c.status, str(c.items), f"{c.audio_ms / _MS_PER_HOUR:.2f}")
    console.print(table)
    console.print(f"Audio done: {_audio_hours(counts, 'done'):.2f} h")
    for status, items in latest.items():
        if not items:
            continue
        caption = _SKIPPED_HINT if status == "skipped" else None
        section = Table(title=_section_title(status).capitalize(), caption=caption)
        for name in ("Source", "Language", "Kind", "Attempts", "Retry", "Message"):
            section.add_column(name, overflow="fold")
        for item in items:
            name, message = _named(item, roots=roots)
            cells = (name, one_line(item.language), one_line(item.error_kind),
                     str(item.attempts), _retry_cell(item, plain=False), message)  # fmt: skip
            section.add_row(*(Text(cell) for cell in cells))  # no markup
        console.print(section)


def _print_plain(
    counts: list[StatusCount], latest: dict[str, list[ItemRecord]], *, roots: list[str]
) -> None:
    typer.echo("language\tstatus\titems\taudio_hours")
    for c in counts:
        typer.echo(f"{c.language}\t{c.status}\t{c.items}\t{c.audio_ms / _MS_PER_HOUR:.2f}")
    typer.echo(f"audio hours done: {_audio_hours(counts, 'done'):.2f}")
    for status, items in latest.items():
        if items:
            typer.echo(f"{_section_title(status)}:")
            typer.echo("source\tlanguage\terror_kind\tattempts\tretry\tmessage")
        for item in items:
            source, message = _named(item, roots=roots)
            kind, retry = one_line(item.error_kind), _retry_cell(item, plain=True)
            language = one_line(item.language)
            typer.echo(f"{source}\t{language}\t{kind}\t{item.attempts}\t{retry}\t{message}")
    if latest.get("skipped"):
        typer.echo(_SKIPPED_HINT, err=True)  # for a person; stdout stays one row per line


def _print_deliveries_rich(console: Console, deliveries: list[DeliveryCount]) -> None:
    """Rows of the deliveries table by status (and target, past the docs upload alone);
    nothing when `deliver` never ran."""
    if not deliveries:
        return
    table = Table(title="Deliveries")
    by_target = _several_targets(deliveries)
    if by_target:
        table.add_column("Target")
    table.add_column("Status")
    table.add_column("Rows", justify="right")
    for c in deliveries:
        cells = [one_line(c.target or "")] if by_target else []
        table.add_row(*cells, c.status, str(c.rows))
    console.print(table)


def _print_deliveries_plain(deliveries: list[DeliveryCount]) -> None:
    if not deliveries:
        return
    if not _several_targets(deliveries):
        typer.echo("delivery_status\trows")
        for c in deliveries:
            typer.echo(f"{c.status}\t{c.rows}")
        return
    typer.echo("delivery_target\tdelivery_status\trows")
    for c in deliveries:
        typer.echo(f"{one_line(c.target or '')}\t{c.status}\t{c.rows}")


def _several_targets(deliveries: list[DeliveryCount]) -> bool:
    """True once anything went (or waits to go) elsewhere than the docs upload."""
    return any(c.target not in (None, "docs") for c in deliveries)


@db_app.command("upgrade")
def db_upgrade_command() -> None:
    """Upgrade the database schema to the newest revision."""
    with command_errors():
        settings = load_settings()
        revision = upgrade_database(
            settings.storage.database_url, busy_timeout_ms=settings.storage.busy_timeout_ms
        )
        where = settings.storage.database_url_redacted
    typer.echo(f"database {where} is at revision {revision}")
