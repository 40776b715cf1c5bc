"""`medasr run` and `medasr rerun-failures`: the flows from a terminal or a cron job.

Settings, the service settings and the source are checked before Prefect starts, so a
mistake costs a second and exits 2 with one line. Then Prefect's API starts in the
background (flows/prefect_api.py) while the run context is built once (store opened,
flows/run_context.py) and the source is listed and registered; the flow uses that
context. Credentials rejected exits 3 after the summary table, with one line naming
MEDASR_TOKEN; an unreachable PREFECT_API_URL exits 2 with one line.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from config.errors import (
    EXIT_CREDENTIALS,
    EXIT_INTERRUPTED,
    EXIT_TEMPORARY,
    EXIT_USAGE,
    ConfigError,
)
from config.settings import Settings, StorageSettings
from flows.backlog import transcribe_backlog
from flows.cli.console import print_summary, show_progress
from flows.cli.interrupts import run_interruptibly
from flows.cli.log_level import medasr_log_level
from flows.cli.quiet_errors import typed_errors_without_traceback
from flows.prefect_api import (
    PrefectApi,
    PrefectDidNotStart,
    PrefectUnavailable,
    start_prefect_api,
)
from flows.rerun import rerun_failures
from flows.run_context import (
    RunContext,
    RunRequest,
    checked_settings,
    open_run_context,
    prepared_run,
)
from flows.summary import RunStopped, exit_code_for
from service.client import max_wav_bytes_for
from service.errors import CredentialsRejected
from storage import open_store
from storage.database import database_exists
from storage.errors import SourceError, SourceNotFound, SourceUnreadable, StoreError
from storage.interface import UnitOfWorkFactory
from tasks.discovery.discover import Discovery, check_manifest, check_source, discover_and_register
from tasks.transcription.plan import plan_backlog, plan_rows
from tasks.work.journal import Journal

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
    request = RunRequest(
        language=language,
        source=source,
        concurrency=concurrency,
        encrypt=encrypt,
        batch_size=batch_size,
    )
    settings = _checked(request)
    try:
        check_manifest(source, manifest=manifest)
    except ConfigError as exc:  # ManifestInvalid: one line, before Prefect starts
        _usage_error("manifest error", exc)
    if dry_run:
        _print_plan(source, settings=settings, language=language, include=include, exclude=exclude)
        return
    listing = _Listing(
        source=source,
        language=language,
        include=include or [],
        exclude=exclude or [],
        manifest=str(manifest) if manifest is not None else None,
    )
    with _prepared(request, settings) as (api, run):
        _run_and_report(
            lambda: transcribe_backlog(
                source=source,
                language=language,
                limit=limit,
                concurrency=concurrency,
                encrypt=encrypt,
                batch_size=batch_size,
                include=include,
                exclude=exclude,
                manifest=listing.manifest,
            ),
            api=api,
            run=run,
            before_flow=listing.register,
            quiet=quiet,
            title="medasr run",
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
    request = RunRequest(language=language, concurrency=concurrency)
    settings = _checked(request)
    with _prepared(request, settings) as (api, run):
        _run_and_report(
            lambda: rerun_failures(
                language=language,
                include_permanent=include_permanent,
                include_skipped=include_skipped,
                concurrency=concurrency,
            ),
            api=api,
            run=run,
            quiet=quiet,
            title="medasr rerun-failures",
        )


def _checked(request: RunRequest) -> Settings:
    """Settings, service settings and the source root, checked in a second; else exit 2."""
    try:
        settings = checked_settings(request)
        if request.source is not None:
            check_source(request.source)
    except ConfigError as exc:  # UnsupportedSource (an unknown scheme) included
        _usage_error("configuration error", exc)
    except SourceError as exc:
        _usage_error("usage error", exc)
    return settings


@contextmanager
def _prepared(request: RunRequest, settings: Settings) -> Iterator[tuple[PrefectApi, RunContext]]:
    """Start Prefect's API (in the background), then open the run's store; else exit 2.

    The flow called inside the block uses this run context (flows/run_context.py).
    """
    try:
        Journal(settings.storage.data_dir / "journal").check_writable()  # before any request
    except ConfigError as exc:
        _usage_error("configuration error", exc)
    try:
        api = start_prefect_api(start_timeout_s=settings.pipeline.prefect_start_timeout_s)
    except PrefectUnavailable as exc:
        _usage_error("configuration error", exc)
    try:
        run = _opened(request, settings)
    except BaseException:
        api.stop()
        raise
    try:
        with prepared_run(run):
            yield api, run
    finally:
        run.close()


def _opened(request: RunRequest, settings: Settings) -> RunContext:
    """The run context: its store opened (a new SQLite file is created and migrated)."""
    storage = settings.storage
    try:
        return open_run_context(request, settings=settings)
    except ConfigError as exc:  # the URL itself: a folder that is not there, a bad dialect
        _usage_error("configuration error", exc)
    except StoreError as exc:  # an unreachable server, a file that is not a database
        where = storage.database_url_redacted
        typer.echo(f"medasr: database error: {exc} (MEDASR_DATABASE_URL={where})", err=True)
        raise typer.Exit(EXIT_USAGE) from None


@dataclass(frozen=True)
class _Listing:
    """The source listing of `medasr run`, done while Prefect's server starts."""

    source: str
    language: str
    include: list[str]
    exclude: list[str]
    manifest: str | None

    def register(self, run: RunContext) -> None:
        """List and register now; the flow reports it (and raises what it raised)."""
        listed: Future[Discovery] = Future()
        try:
            listed.set_result(
                discover_and_register(
                    source=self.source,
                    language=self.language,
                    store=run.store,
                    settle_s=run.settings.pipeline.settle_s,
                    include=self.include,
                    exclude=self.exclude,
                    manifest=self.manifest,
                )
            )
        except Exception as exc:  # the flow raises it inside its run record
            listed.set_exception(exc)
        run.listed = listed


def _usage_error(what: str, exc: Exception) -> NoReturn:
    typer.echo(f"medasr: {what}: {exc}", err=True)
    raise typer.Exit(EXIT_USAGE)


def _run_and_report(
    flow_run: Callable[[], FlowRun],
    *,
    api: PrefectApi,
    run: RunContext,
    quiet: bool,
    title: str,
    before_flow: Callable[[RunContext], None] | None = None,
) -> None:
    """Do what needs no Prefect while its server starts, run the flow with progress
    output, print its summary table, exit with its code."""
    with (
        medasr_log_level(run.settings.pipeline.log_level),
        show_progress(quiet=quiet, source_roots=run.source_roots),
    ):
        try:
            if before_flow is not None:
                before_flow(run)
            api.ready()
        except PrefectUnavailable as exc:
            _usage_error("configuration error", exc)
        except PrefectDidNotStart as exc:  # a busy host, not a setting: try again
            typer.echo(f"medasr: Prefect did not start: {exc}", err=True)
            raise typer.Exit(EXIT_TEMPORARY) from None
        except KeyboardInterrupt:
            typer.echo("medasr: interrupted before any file was sent", err=True)
            raise typer.Exit(EXIT_INTERRUPTED) from None
        with api.in_use():
            summary, stopped = _run_flow(flow_run())
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


def _existing_store(storage: StorageSettings) -> UnitOfWorkFactory | None:
    """The store if one exists: a dry run never creates a database."""
    return open_store(storage) if database_exists(storage.database_url) else None
