"""The nightly flow: discover a source, register its files, transcribe what is pending."""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger

from config.errors import ConfigError
from config.settings import Settings, load_settings
from flows.drain import drain_pending
from flows.summary import publish_summary, summarize
from service.contract import LANGUAGES, is_supported_language
from storage.database import Store
from storage.sources import normalize_source
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
) -> dict[str, Any]:
    """Transcribe every new or changed file under `source`; returns the run summary."""
    settings = settings_for_run(
        language=language, concurrency=concurrency, encrypt=encrypt, batch_size=batch_size
    )
    logger = get_run_logger()
    store = Store.open(settings.storage)
    try:
        discovery = discover_task(
            source=source,
            language=language,
            store=store,
            settle_s=settings.pipeline.settle_s,
            include=include or (),
            exclude=exclude or (),
        )
        logger.info(
            "listed %d files (%d new, %d changed, %d not listed, %d newly unreadable)",
            discovery.listed,
            discovery.new,
            discovery.changed,
            len(discovery.skipped),
            discovery.unreadable,
        )
        result = await drain_pending(
            settings=settings,
            store=store,
            language=language,
            source_prefix=normalize_source(source),
            limit=limit,
        )
    finally:
        store.dispose()
    summary = summarize(
        result,
        listed=discovery.listed,
        unlisted=sum(not skipped.unreadable for skipped in discovery.skipped),
        unreadable=discovery.unreadable,
    )
    await publish_summary(summary, title=f"medasr backlog run ({language})")
    if result.stopped is not None:
        raise result.stopped
    return summary


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
