"""`medasr purge`: remove the patient data of recordings finished longer ago than a period.

What goes and what stays is storage/retention.py's; the paging, receipts and journal
are tasks/retention/recording_purge.py's; medasr's flow runs in Prefect older than the period are
flows/prefect_retention.py's. Exit codes: 0 done (also when something was kept), 2 a
bad period or language or no database, 1 the store failed (pages already committed
stay purged, each with its receipt).
"""

from __future__ import annotations

from typing import Annotated

import typer

from audit import command_actor
from config.errors import ConfigError
from config.settings import Settings, load_settings
from flows.cli.console import print_store
from flows.cli.error_exits import command_errors
from service.contract import is_supported_language
from storage import open_store
from storage.database import database_exists
from storage.interface import UnitOfWorkFactory
from tasks.retention.durations import parse_retention
from tasks.retention.recording_purge import PurgeRequest, PurgeResult, purge_recordings


def purge_command(
    older_than: Annotated[
        str,
        typer.Option("--older-than", help="Purge recordings finished longer ago: 90d, 12w, 1y."),
    ],
    language: Annotated[
        str | None, typer.Option("--language", "-l", help="Only recordings of this language.")
    ] = None,
    include_undelivered: Annotated[
        bool,
        typer.Option(
            "--include-undelivered",
            help="Also held, failed and undelivered recordings (kept by default; in doubt: never).",
        ),
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Count what would be purged; change nothing.")
    ] = False,
) -> None:
    """Remove the transcripts and other patient data of recordings finished longer ago
    than a period; their rows stay (status purged), so nothing is bought or filed again.

    By default only recordings delivered to every target they were sent to (or with no
    delivery configured) and skipped ones; the rest are counted as kept. Each page of
    the purge writes a `purged` receipt to the audit trail, which a purge never touches.
    """
    with command_errors():
        retention = parse_retention(older_than)
        if language is not None and not is_supported_language(language):
            raise ConfigError(f"unsupported language {language[:16]!r}")
        settings = load_settings()
        store = _open_store(settings)
        try:
            request = PurgeRequest(
                retention=retention,
                actor=command_actor(),
                language=language,
                include_undelivered=include_undelivered,
                delivery_configured=_delivery_configured(settings, store),
                dry_run=dry_run,
            )
            result = purge_recordings(
                store, request, journal_folder=settings.storage.data_dir / "journal"
            )
        finally:
            store.dispose()
        for line in result_lines(result, request):
            typer.echo(line)
        print_store(settings.storage.store_location)
        if not dry_run:
            from flows.prefect_retention import forget_old_flow_runs  # Prefect: only here

            typer.echo(forget_old_flow_runs(before=result.cutoff).sentence())


def _open_store(settings: Settings) -> UnitOfWorkFactory:
    storage = settings.storage
    if not database_exists(storage.database_url):
        raise ConfigError(f"no database at {storage.database_url_redacted}: nothing to purge")
    return open_store(storage)


def _delivery_configured(settings: Settings, store: UnitOfWorkFactory) -> bool:
    """Delivery is on (MEDASR_DELIVER) or has ever run here: then a done recording with
    no delivery yet is undelivered, not 'no delivery configured'."""
    if settings.delivery.enabled:
        return True
    with store.unit_of_work(read_only=True) as uow:
        return bool(uow.deliveries.delivery_counts())


def result_lines(result: PurgeResult, request: PurgeRequest) -> list[str]:
    """What the purge did, for a person: counts and times, never a recording's name."""
    cutoff = result.cutoff.isoformat(timespec="seconds")
    verb = "would purge" if request.dry_run else "purged"
    lines = [
        f"{verb} {result.total} recording(s) finished before {cutoff} "
        f"(older than {request.retention.text})"
    ]
    for (language, status), count in sorted(result.purged.items()):
        if language != "*":
            lines.append(f"  {language}\t{status}\t{count}")
    if result.oldest and result.newest:
        lines.append(
            f"  finished between {result.oldest.isoformat(timespec='seconds')} "
            f"and {result.newest.isoformat(timespec='seconds')}"
        )
    kept = sum(k.items for k in result.kept)
    if kept:
        reasons = ", ".join(f"{k.reason} {k.items} ({k.language})" for k in result.kept)
        lines.append(
            f"kept {kept} recording(s): {reasons}; --include-undelivered purges the held, "
            "failed and undelivered ones (in doubt or sending: never)"
        )
    if not request.dry_run and result.total:
        lines.append(
            f"receipts in the audit trail: {result.receipts}; digest {result.digest}; "
            f"journal entries removed: {result.journal_entries}; store: {result.reclaimed}"
        )
    if not request.dry_run and result.not_audio_names:
        lines.append(
            f"names of files ignored as not audio removed: {result.not_audio_names} "
            "(the next run lists them again if they are still in the source)"
        )
    return lines
