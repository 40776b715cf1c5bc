"""The nightly flow: discover a source, register its files, transcribe what is pending."""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger

from config.errors import ConfigError
from config.settings import Settings, load_settings
from flows.deliver_step import deliver_after_backlog
from flows.drain import DrainResult, drain_pending
from flows.run_record import recorded_run
from flows.summary import publish_summary, stopped_with, summarize
from service.contract import LANGUAGES, is_supported_language
from service.errors import CredentialsRejected
from storage.database import Store
from storage.sources import normalize_source
from tasks.discover import Discovery
from tasks.steps import discover_task


@flow(name="transcribe-backlog", log_prints=False, validate_parameters=True)
async def transcribe_backlog(
    source: str,
    language: str,
    limit: int | None = None,
    concurrency: int | None = None,
    encrypt: bool | None = None,
    batch_size: int | None = None,
    include: list[str] | None = None,
    exclude: list[str] | None = None,
    manifest: str | None = None,
) -> dict[str, Any]:
    """Transcribe every new or changed file under `source`; returns the run summary.

    With MEDASR_DELIVER=true, done transcripts are then delivered (flows/deliver_step.py).
    """
    settings = settings_for_run(
        language=language, concurrency=concurrency, encrypt=encrypt, batch_size=batch_size
    )
    root = normalize_source(source)
    store = Store.open(settings.storage)
    try:
        with recorded_run(store, source=root, language=language) as run:
            discovery = _discover(
                source,
                language=language,
                store=store,
                settings=settings,
                globs=(include, exclude),
                manifest=manifest,
            )
            result = await drain_pending(
                settings=settings, store=store, language=language, source_prefix=root, limit=limit
            )
            run.summary = summarize(result, discovery=discovery, source_roots=(root,))
            if result.stopped is None and settings.delivery.enabled:
                run.summary |= await deliver_after_backlog(settings, store, language=language)
    finally:
        store.dispose()
    return await finish(run.summary, result, title=f"medasr backlog run ({language})")


async def finish(summary: dict[str, Any], result: DrainResult, *, title: str) -> dict[str, Any]:
    """Publish the summary artifact; raise what stopped the run (credentials, a setting)."""
    await publish_summary(summary, title=title)
    if isinstance(result.stopped, CredentialsRejected):
        raise stopped_with(summary, result.stopped)
    if isinstance(result.stopped, ConfigError):  # the CLI exits 2 with its one line
        raise result.stopped
    return summary  # finished, or interrupted: the summary says which (exit code 130)


def _discover(
    source: str,
    *,
    language: str,
    store: Store,
    settings: Settings,
    globs: tuple[list[str] | None, list[str] | None],
    manifest: str | None = None,
) -> Discovery:
    """List and register the source (a Prefect task), and say what was found."""
    include, exclude = globs
    discovery = discover_task(
        source=source,
        language=language,
        store=store,
        settle_s=settings.pipeline.settle_s,
        include=include or (),
        exclude=exclude or (),
        manifest=manifest,
    )
    get_run_logger().info(
        "listed %d files (%d new, %d changed, %d not listed, %d newly unreadable)",
        discovery.listed,
        discovery.new,
        discovery.changed,
        len(discovery.skipped),
        discovery.unreadable,
    )
    return discovery


def settings_for_run(
    *,
    language: str | None,
    concurrency: int | None = None,
    encrypt: bool | None = None,
    batch_size: int | None = None,
) -> Settings:
    """Load settings once and apply this run's overrides; raises ConfigError."""
    if language is not None and not is_supported_language(language):
        raise ConfigError(f"unsupported language {language!r}; use one of: {', '.join(LANGUAGES)}")
    settings = load_settings()
    pipeline = settings.pipeline.model_copy(
        update={
            k: v
            for k, v in {"concurrency": concurrency, "batch_size": batch_size}.items()
            if v is not None
        }
    )
    encryption = settings.encryption
    if encrypt is not None:
        encryption = encryption.model_copy(update={"enabled": encrypt})
        if encrypt and encryption.jwe_key is None:
            raise ConfigError("--encrypt needs a key: set MEDASR_JWE_KEY (and MEDASR_JWE_KID)")
    return settings.model_copy(update={"pipeline": pipeline, "encryption": encryption})
