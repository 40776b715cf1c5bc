"""`medasr run` and `medasr rerun-failures`: the flows from a terminal or a cron job."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Annotated, Any

import typer

from config.errors import ConfigError
from config.settings import Settings
from flows.backlog import settings_for_run, transcribe_backlog
from flows.console import print_summary, show_progress
from flows.log_level import medasr_log_level
from flows.quiet_errors import typed_errors_without_traceback
from flows.rerun import rerun_failures
from flows.summary import EXIT_CREDENTIALS, EXIT_USAGE, exit_code_for
from service.client import max_wav_bytes_for
from service.errors import CredentialsRejected
from tasks.plan import plan_backlog


def run_command(
    source: Annotated[str, typer.Argument(help="Folder, file:// URL or s3://bucket/prefix.")],
    language: Annotated[str, typer.Option("--language", "-l", help="Language code, e.g. en-IN.")],
    encrypt: Annotated[
        bool | None, typer.Option("--encrypt/--no-encrypt", help="JWE-encrypt requests.")
    ] = None,
    concurrency: Annotated[
        int | None, typer.Option(min=1, max=256, help="Requests in flight at once.")
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
) -> None:
    """Transcribe every new or changed recording under SOURCE."""
    if dry_run:
        _print_plan(source, language=language, encrypt=encrypt, include=include, exclude=exclude)
        return
    # Fail on bad settings in a second, before Prefect's API server starts.
    settings = _check_settings(lambda: settings_for_run(language=language, encrypt=encrypt))
    with medasr_log_level(settings.pipeline.log_level), show_progress(quiet=quiet):
        summary = _run_flow(
            transcribe_backlog(
                source=source,
                language=language,
                limit=limit,
                concurrency=concurrency,
                encrypt=encrypt,
                batch_size=batch_size,
                include=include,
                exclude=exclude,
            )
        )
    print_summary(summary, title="medasr run")
    raise typer.Exit(exit_code_for(summary))


def rerun_command(
    language: Annotated[
        str | None, typer.Option("--language", "-l", help="Only this language.")
    ] = None,
    include_permanent: Annotated[
        bool, typer.Option("--include-permanent", help="Also re-queue permanent failures.")
    ] = False,
    concurrency: Annotated[int | None, typer.Option(min=1, max=256)] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q")] = False,
) -> None:
    """Re-queue failures that may succeed now and transcribe them."""
    settings = _check_settings(lambda: settings_for_run(language=language))
    with medasr_log_level(settings.pipeline.log_level), show_progress(quiet=quiet):
        summary = _run_flow(
            rerun_failures(
                language=language, include_permanent=include_permanent, concurrency=concurrency
            )
        )
    print_summary(summary, title="medasr rerun-failures")
    raise typer.Exit(exit_code_for(summary))


def _check_settings(load: Callable[[], Settings]) -> Settings:
    try:
        return load()
    except ConfigError as exc:
        typer.echo(f"medasr: configuration error: {exc}", err=True)
        raise typer.Exit(EXIT_USAGE) from None


def _run_flow(coroutine: Any) -> dict[str, Any]:
    """Run a flow coroutine; credentials rejected becomes exit code 3 with one line."""
    try:
        with typed_errors_without_traceback():
            result: dict[str, Any] = asyncio.run(coroutine)
    except CredentialsRejected as exc:
        typer.echo(f"medasr: stopped: {exc}", err=True)
        raise typer.Exit(EXIT_CREDENTIALS) from None
    except ConfigError as exc:
        typer.echo(f"medasr: configuration error: {exc}", err=True)
        raise typer.Exit(EXIT_USAGE) from None
    return result


def _print_plan(
    source: str,
    *,
    language: str,
    encrypt: bool | None,
    include: list[str] | None,
    exclude: list[str] | None,
) -> None:
    settings = settings_for_run(language=language, encrypt=encrypt)
    if settings.encryption.enabled and settings.encryption.jwe_key is None:
        raise ConfigError("encryption is on but MEDASR_JWE_KEY is not set")
    plan = plan_backlog(
        source=source,
        max_wav_bytes=max_wav_bytes_for(settings.service, settings.encryption),
        settle_s=settings.pipeline.settle_s,
        include=include or (),
        exclude=exclude or (),
    )
    print_summary(
        {
            "files": plan.files,
            "audio_hours": round(plan.audio_ms / 3_600_000, 3),
            "chunks": plan.chunks,
            "requests": plan.requests,
            "files_not_probed": plan.unprobed,
            "files_not_listed": plan.not_listed,
            "sent": 0,
        },
        title=f"medasr dry run ({language}): nothing sent",
    )
