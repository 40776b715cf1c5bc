"""`medasr run` and `medasr rerun-failures`: the flows from a terminal or a cron job.

Settings, the service settings and the source are checked before Prefect starts, so a
mistake costs a second and exits 2 with one line. Credentials rejected exits 3 after
the summary table, with one line naming MEDASR_TOKEN.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from config.errors import ConfigError
from config.settings import Settings, StorageSettings
from flows.backlog import settings_for_run, transcribe_backlog
from flows.console import print_summary, show_progress
from flows.interrupts import run_interruptibly
from flows.log_level import medasr_log_level
from flows.quiet_errors import typed_errors_without_traceback
from flows.rerun import rerun_failures
from flows.summary import EXIT_CREDENTIALS, EXIT_USAGE, RunStopped, exit_code_for
from service.client import max_wav_bytes_for
from service.errors import CredentialsRejected
from service.preflight import check_service_config
from storage.database import Store, database_exists
from storage.errors import SourceError, SourceNotFound, SourceUnreadable, StoreError
from storage.sources import normalize_source
from tasks.discover import check_manifest, check_source
from tasks.plan import plan_backlog, plan_rows
from tasks.runs import known_sources

FlowRun = Coroutine[Any, Any, dict[str, Any]]


def run_command(
    source: Annotated[str, typer.Argument(help="Folder, file:// URL or s3://bucket/prefix.")],
    language: Annotated[str, typer.Option("--language", "-l", help="Language code, e.g. en-IN.")],
    encrypt: Annotated[
        bool | None, typer.Option("--encrypt/--no-encrypt", help="JWE-encrypt requests.")
    ] = None,
    concurrency: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=256,
            help="Most requests in flight (a ceiling: medasr adapts below it when throttled).",
        ),
    ] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="Process at most N files.")] = None,
    batch_size: Annotated[int | None, typer.Option(min=1, help="Files per task run.")] = None,
    include: Annotated[
        list[str] | None, typer.Option(help="Only paths matching this glob.")
    ] = None,
    exclude: Annotated[
        list[str] | None, typer.Option(help="Skip paths matching this glob.")
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the plan; send nothing.")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress output.")] = False,
    manifest: Annotated[
        Path | None,
        typer.Option("--manifest", help="Metadata CSV (default: medasr.csv at the source root)."),
    ] = None,
) -> None:
    """Transcribe every new or changed recording under SOURCE."""
    settings = _checked(lambda: settings_for_run(language=language, encrypt=encrypt), source)
    try:
        check_manifest(source, manifest=manifest)
    except ConfigError as exc:  # ManifestInvalid: one line, before Prefect starts
        _usage_error("manifest error", exc)
    if dry_run:
        _print_plan(source, settings=settings, language=language, include=include, exclude=exclude)
        return
    _check_store(settings.storage)
    flow_run = transcribe_backlog(
        source=source,
        language=language,
        limit=limit,
        concurrency=concurrency,
        encrypt=encrypt,
        batch_size=batch_size,
        include=include,
        exclude=exclude,
        manifest=str(manifest) if manifest is not None else None,
    )
    _run_and_report(
        flow_run,
        settings=settings,
        quiet=quiet,
        title="medasr run",
        roots=(normalize_source(source),),
    )


def rerun_command(
    language: Annotated[
        str | None, typer.Option("--language", "-l", help="Only this language.")
    ] = None,
    include_permanent: Annotated[
        bool,
        typer.Option(
            "--include-permanent",
            help="Re-queue every failure: permanent ones and those past MEDASR_MAX_ATTEMPTS.",
        ),
    ] = False,
    include_skipped: Annotated[
        bool,
        typer.Option(
            "--include-skipped",
            help="Re-queue recordings skipped as silent too; their audio is judged afresh.",
        ),
    ] = False,
    concurrency: Annotated[int | None, typer.Option(min=1, max=256)] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q")] = False,
) -> None:
    """Re-queue failures that may succeed now and transcribe them."""
    settings = _checked(lambda: settings_for_run(language=language))
    _check_store(settings.storage)
    flow_run = rerun_failures(
        language=language,
        include_permanent=include_permanent,
        include_skipped=include_skipped,
        concurrency=concurrency,
    )
    _run_and_report(
        flow_run,
        settings=settings,
        quiet=quiet,
        title="medasr rerun-failures",
        roots=_known_roots(settings.storage),
    )


def _checked(load: Callable[[], Settings], source: str | None = None) -> Settings:
    """Settings, service settings and the source root, checked in a second; else exit 2."""
    try:
        settings = load()
        check_service_config(service=settings.service, encryption=settings.encryption)
        if source is not None:
            check_source(source)
    except ConfigError as exc:  # UnsupportedSource (an unknown scheme) included
        _usage_error("configuration error", exc)
    except SourceError as exc:
        _usage_error("usage error", exc)
    return settings


def _check_store(storage: StorageSettings) -> None:
    """Open the store (a new SQLite file is created and migrated) before Prefect starts."""
    try:
        Store.open(storage).dispose()
    except ConfigError as exc:  # the URL itself: a folder that is not there, a bad dialect
        _usage_error("configuration error", exc)
    except StoreError as exc:  # an unreachable server, a file that is not a database
        where = storage.database_url_redacted
        typer.echo(f"medasr: database error: {exc} (MEDASR_DATABASE_URL={where})", err=True)
        raise typer.Exit(EXIT_USAGE) from None


def _known_roots(storage: StorageSettings) -> tuple[str, ...]:
    """The sources of recorded runs, for naming a rerun's files (the store was checked)."""
    store = Store.open(storage)
    try:
        return known_sources(store)
    finally:
        store.dispose()


def _usage_error(what: str, exc: Exception) -> NoReturn:
    typer.echo(f"medasr: {what}: {exc}", err=True)
    raise typer.Exit(EXIT_USAGE)


def _run_and_report(
    flow_run: FlowRun, *, settings: Settings, quiet: bool, title: str, roots: Sequence[str]
) -> None:
    """Run a flow with progress output (files named relative to `roots`), print its
    summary table, exit with its code."""
    with (
        medasr_log_level(settings.pipeline.log_level),
        show_progress(quiet=quiet, source_roots=roots),
    ):
        summary, stopped = _run_flow(flow_run)
    print_summary(summary, title=title)
    if stopped is not None:
        _credentials_rejected(stopped)
    if summary.get("interrupted"):
        typer.echo(
            "medasr: interrupted: finished files are recorded, the others are pending; "
            "run the same command again to go on",
            err=True,
        )
    raise typer.Exit(exit_code_for(summary))


def _run_flow(flow_run: FlowRun) -> tuple[dict[str, Any], CredentialsRejected | None]:
    """The flow's summary, and the credentials error that stopped it early, if any."""
    try:
        with typed_errors_without_traceback():
            return asyncio.run(run_interruptibly(flow_run)), None
    except RunStopped as exc:
        return exc.summary, exc
    except CredentialsRejected as exc:  # stopped before there was anything to summarize
        _credentials_rejected(exc)
    except ConfigError as exc:
        _usage_error("configuration error", exc)
    except (SourceNotFound, SourceUnreadable) as exc:  # a bucket that is not there
        _usage_error("usage error", exc)


def _credentials_rejected(exc: CredentialsRejected) -> NoReturn:
    message = str(exc)
    if "MEDASR_TOKEN" not in message:
        message += " (set a valid MEDASR_TOKEN)"
    typer.echo(f"medasr: stopped: credentials rejected: {message}", err=True)
    raise typer.Exit(EXIT_CREDENTIALS)


def _print_plan(
    source: str,
    *,
    settings: Settings,
    language: str,
    include: list[str] | None,
    exclude: list[str] | None,
) -> None:
    store = _existing_store(settings.storage)
    try:
        plan = plan_backlog(
            source=source,
            language=language,
            store=store,
            max_wav_bytes=max_wav_bytes_for(settings.service, settings.encryption),
            min_pause_ms=settings.pipeline.min_pause_ms,
            settle_s=settings.pipeline.settle_s,
            include=include or (),
            exclude=exclude or (),
        )
    finally:
        if store is not None:
            store.dispose()
    print_summary(
        {**plan_rows(plan), "sent": 0}, title=f"medasr dry run ({language}): nothing sent"
    )


def _existing_store(storage: StorageSettings) -> Store | None:
    """The store if one exists: a dry run never creates a database."""
    return Store.open(storage) if database_exists(storage.database_url) else None
