"""`medasr run` and `medasr rerun-failures`: the flows from a terminal or a cron job.

Settings, the service settings, the source (parsed once) and its manifest (read once)
are checked before Prefect starts, so a mistake costs a second and exits 2 with one
line. Then the run is bootstrapped (flows/setup/bootstrap.py: store opened), Prefect's
API starts in the background (flows/prefect_runtime/prefect_api.py) while the source is
listed and registered (or the failures re-queued), the run's first batches go out before
it answers (flows/prefect_runtime/head_start.py, flows/cli/flow_run.py), and the flow
carries on over that Run. Credentials rejected exits 3 after the summary table, with one
line naming MEDASR_TOKEN; an unreachable PREFECT_API_URL exits 2 with one line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from config.errors import (
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    ConfigError,
)
from config.settings import Settings
from flows.cli.console import print_summary, show_progress
from flows.cli.dry_run import print_plan
from flows.cli.error_exits import credentials_rejected, usage_error
from flows.cli.flow_run import BACKLOG_FLOW, RERUN_FLOW, interrupted_line, run_flow
from flows.cli.log_level import medasr_log_level
from flows.cli.nothing_to_do import end_with_nothing_to_do, nothing_to_claim
from flows.prefect_runtime.held_logs import HeldLogs, held_logs
from flows.prefect_runtime.prefect_api import (
    PrefectApi,
    PrefectUnavailable,
    start_prefect_api,
)
from flows.reporting.summary import RunSummary, StopReason
from flows.setup.bootstrap import (
    PreparedSource,
    Run,
    RunRequest,
    backlog_request,
    bootstrap,
    checked_settings,
)
from flows.setup.bootstrap import prepare_source as prepare_run_source
from flows.setup.listing import Listed, listed_now
from service.status import require_token
from storage.errors import (
    ManifestInvalid,
    SourceError,
    SourceNotFound,
    SourceUnreadable,
    StoreError,
)
from tasks.discovery.languages import manifest_gives_languages
from tasks.transcription.bookkeeping import requeue_failed
from tasks.work.journal import Journal

# `run` and `rerun-failures` alike: the run's audio cap (tasks/transcription/audio_budget.py).
MaxAudioHours = Annotated[
    float | None,
    typer.Option(
        min=0.001,
        metavar="H",
        help="Send at most H audio hours; a recording that would not fit waits, whole.",
    ),
]


def run_command(
    source: Annotated[str, typer.Argument(help="Folder, file:// URL or s3://bucket/prefix.")],
    language: Annotated[
        str | None,
        typer.Option(
            "--language",
            "-l",
            help="Language code, e.g. en-IN: of every recording, or of those whose manifest "
            "row gives none (needed unless the manifest has a language column).",
        ),
    ] = None,
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
    limit: Annotated[
        int | None, typer.Option(min=1, metavar="N", help="Process at most N files.")
    ] = None,
    batch_size: Annotated[int | None, typer.Option(min=1, help="Files per task run.")] = None,
    include: Annotated[
        list[str] | None, typer.Option(metavar="GLOB", help="Only paths matching this glob.")
    ] = None,
    exclude: Annotated[
        list[str] | None, typer.Option(metavar="GLOB", help="Skip paths matching this glob.")
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the plan; send nothing.")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress output.")] = False,
    manifest: Annotated[
        Path | None,
        typer.Option("--manifest", help="Metadata CSV (default: medasr.csv at the source root)."),
    ] = None,
    max_audio_hours: MaxAudioHours = None,
) -> None:
    """Transcribe every new or changed recording under SOURCE."""
    request = backlog_request(
        source=source,
        language=language,
        limit=limit,
        concurrency=concurrency,
        encrypt=encrypt,
        batch_size=batch_size,
        include=include,
        exclude=exclude,
        manifest=manifest,
        max_audio_hours=max_audio_hours,
    )
    settings = _checked(request)
    prepared = _prepared_source(request)
    if language is None and not manifest_gives_languages(prepared.metadata):
        usage_error(
            "usage error",
            "--language is needed: give it, or a manifest with a 'language' column",
        )
    if dry_run:
        print_plan(prepared, settings=settings, language=language, request=request)
        return
    with _started(request, settings, prepared) as (api, run):
        with _in_terminal(run, quiet=quiet) as held:
            with _before_any_request():
                listed = listed_now(run)  # while Prefect's server starts
            early = listed.error is None  # a failed listing: the flow says why
            if early:
                _end_if_idle(api, run, title="medasr run", listed=listed)
            else:
                _end_if_unlisted(api, listed)
            summary = run_flow(
                lambda head: _backlog_flow()(run, listed=listed, head_start=head),
                modules=BACKLOG_FLOW, api=api, run=run, early=early, held=held,
            )  # fmt: skip
        _report(summary, run=run, title="medasr run")


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
    concurrency: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=256,
            help="Most requests in flight (a ceiling: medasr adapts below it when throttled).",
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress output.")] = False,
    max_audio_hours: MaxAudioHours = None,
) -> None:
    """Re-queue failures that may succeed now and transcribe them."""
    request = RunRequest(
        language=language, concurrency=concurrency, max_audio_hours=max_audio_hours
    )
    settings = _checked(request)
    title = "medasr rerun-failures"
    with _started(request, settings, None) as (api, run):
        with _in_terminal(run, quiet=quiet) as held:
            with _before_any_request():
                requeued = _requeued(run, permanent=include_permanent, skipped=include_skipped)
            early = requeued is not None  # a store that failed: the flow says why
            if early:
                _end_if_idle(api, run, title=title, requeued=requeued)
            summary = run_flow(
                lambda head: _rerun_flow()(
                    run,
                    include_permanent=include_permanent,
                    include_skipped=include_skipped,
                    requeued=requeued,
                    head_start=head,
                ),
                modules=RERUN_FLOW,
                api=api,
                run=run,
                early=early,
                held=held,
            )
        _report(summary, run=run, title=title, skipped_rejudged=include_skipped)


def _end_if_idle(
    api: PrefectApi,
    run: Run,
    *,
    title: str,
    listed: Listed | None = None,
    requeued: int | None = None,
) -> None:
    """Exit 0 before the flow when the run would claim nothing and Prefect's temporary
    server would be waited for; a long-running server (PREFECT_API_URL) still gets the
    night's flow run and artifact, which carry the problems still open."""
    if api.starting and nothing_to_claim(run, listed=listed):
        end_with_nothing_to_do(
            api, title=title, listed=listed, requeued=requeued,
            store=run.settings.storage.store_location,
        )  # fmt: skip


def _end_if_unlisted(api: PrefectApi, listed: Listed) -> None:
    """Exit 2 with one line, without waiting for Prefect's temporary server, when the
    source itself cannot be listed (a bucket without credentials, a prefix not there):
    a flow run would only say the same after the server's start."""
    if api.starting and isinstance(listed.error, (SourceNotFound, SourceUnreadable)):
        api.stop()
        usage_error("usage error", f"{listed.error} (Prefect was not started)")


# The flows import Prefect (seconds of start-up): imported once the head start is under way
# (flows/cli/flow_run.py), not before the first request.
def _backlog_flow() -> Callable[..., Any]:
    from flows.backlog_run import backlog_flow

    return backlog_flow


def _rerun_flow() -> Callable[..., Any]:
    from flows.rerun import rerun_flow

    return rerun_flow


def _checked(request: RunRequest) -> Settings:
    """Settings and service settings, checked in a second; else exit 2."""
    try:
        return checked_settings(request)
    except ConfigError as exc:
        usage_error("configuration error", exc)


def _prepared_source(request: RunRequest) -> PreparedSource:
    """The source parsed once and checked, its manifest read once; else exit 2."""
    try:
        prepared = prepare_run_source(request)
    except ManifestInvalid as exc:  # one line, before Prefect starts
        usage_error("manifest error", exc)
    except ConfigError as exc:  # UnsupportedSource (an unknown scheme) included
        usage_error("configuration error", exc)
    except SourceError as exc:
        usage_error("usage error", exc)
    assert prepared is not None, "a backlog request names a source"
    return prepared


@contextmanager
def _started(
    request: RunRequest, settings: Settings, prepared: PreparedSource | None
) -> Iterator[tuple[PrefectApi, Run]]:
    """Start Prefect's API (in the background), then bootstrap the run; else exit 2."""
    try:
        require_token(settings.service.token)  # before Prefect, the store or any decode
        Journal.in_data_dir(settings.storage.data_dir).check_writable()  # before any request
    except ConfigError as exc:
        usage_error("configuration error", exc)
    try:
        api = start_prefect_api(
            start_timeout_s=settings.pipeline.prefect_start_timeout_s,
            stall_s=settings.pipeline.prefect_start_stall_s,
        )
    except PrefectUnavailable as exc:
        usage_error("configuration error", exc)
    try:
        run = _bootstrapped(request, settings, prepared)
    except BaseException:
        api.stop()
        raise
    with run:
        yield api, run


def _bootstrapped(request: RunRequest, settings: Settings, prepared: PreparedSource | None) -> Run:
    """The run: its store opened (a new SQLite file is created and migrated)."""
    try:
        return bootstrap(settings, request, source=prepared)
    except ConfigError as exc:  # the URL itself: a folder that is not there, a bad dialect
        usage_error("configuration error", exc)
    except StoreError as exc:  # an unreachable server, a file that is not a database
        where = settings.storage.database_url_redacted
        typer.echo(f"medasr: database error: {exc} (MEDASR_DATABASE_URL={where})", err=True)
        raise typer.Exit(EXIT_USAGE) from None


def _requeued(run: Run, *, permanent: bool, skipped: bool) -> int | None:
    """The failures re-queued before the head start drains them: how many; None when the
    store failed, which leaves it to the flow (no head start) to say why in its run record."""
    try:
        return requeue_failed(
            run.store,
            language=run.request.language,
            max_attempts=run.settings.service.max_attempts,
            include_permanent=permanent,
            include_skipped=skipped,
        )
    except StoreError:
        return None


@contextmanager
def _in_terminal(run: Run, *, quiet: bool) -> Iterator[HeldLogs]:
    """The run's log level, its log records held until Prefect's import gives them a
    handler, and the progress output, for the work before the flow and the flow."""
    with (
        medasr_log_level(run.settings.pipeline.log_level),
        held_logs() as held,
        show_progress(quiet=quiet, source_roots=run.source_roots),
    ):
        yield held


@contextmanager
def _before_any_request() -> Iterator[None]:
    """Ctrl-C while the source is listed (or failures re-queued): one line, exit 130."""
    try:
        yield
    except KeyboardInterrupt:
        typer.echo("medasr: interrupted before any file was sent", err=True)
        raise typer.Exit(EXIT_INTERRUPTED) from None


def _report(
    summary: RunSummary, *, run: Run, title: str, skipped_rejudged: bool = False
) -> NoReturn:
    """Print the flow's summary table and exit with its code (a configuration stop exits 2
    with one line, as before the flow)."""
    if summary.stopped is StopReason.CONFIGURATION:
        usage_error("configuration error", summary.stop_message or "a setting stopped the run")
    store = run.settings.storage.store_location
    print_summary(summary, title=title, store=store, skipped_rejudged=skipped_rejudged)
    if summary.stopped is StopReason.CREDENTIALS:
        credentials_rejected(summary.stop_message or "")
    if summary.stopped is StopReason.INTERRUPTED:
        interrupted_line()
    raise typer.Exit(summary.exit_code)
