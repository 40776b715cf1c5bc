"""`medasr run --dry-run`: the plan of a run, printed; nothing sent, nothing written.

The plan is tasks/transcription/backlog_plan.py's: files, audio hours, chunks, requests,
and the billed minutes and cost at MEDASR_SERVICE__PRICE_PER_AUDIO_MIN (each request at
its chunk's length, at least MEDASR_SERVICE__BILLED_MIN_S_PER_REQUEST). A dry run never
creates a database; a source that cannot be listed exits 2, as a real run does.
"""

from __future__ import annotations

from config.settings import Settings, StorageSettings
from flows.cli.console import print_named, print_store, print_table
from flows.cli.error_exits import usage_error
from flows.setup.bootstrap import PreparedSource, RunRequest, source_as_known
from service.client import max_wav_bytes_for
from storage import open_store
from storage.database import database_exists
from storage.errors import SourceNotFound, SourceUnreadable
from storage.interface import UnitOfWorkFactory
from tasks.transcription.backlog_plan import Plan, plan_backlog, plan_rows


def print_plan(
    prepared: PreparedSource, *, settings: Settings, language: str | None, request: RunRequest
) -> None:
    """The dry run's plan as a table (billed minutes and cost included), and the files
    that could not be decoded or are in a language the service does not take, named."""
    store = _existing_store(settings.storage)
    try:
        if store is not None:  # the path an earlier run knew the source by, as a run does
            prepared = source_as_known(prepared, store=store, request=request)
        plan = _planned(
            prepared, settings=settings, language=language, request=request, store=store
        )
    finally:
        if store is not None:
            store.dispose()
    price = settings.service.price_per_audio_min
    rows = [*plan_rows(plan, price_per_audio_min=price).items(), ("sent", 0)]
    print_table(rows, title=f"medasr dry run ({language or 'manifest languages'}): nothing sent")
    print_store(settings.storage.store_location)
    root = prepared.location.uri
    print_named("not decodable", plan.undecodable_uris, total=plan.undecodable, root=root)
    print_named(
        "language not taken", plan.language_not_taken_uris, total=plan.language_not_taken, root=root
    )
    print_named(
        "not listed",
        plan.not_listed_uris,
        total=plan.not_listed,
        root=root,
        reasons=plan.not_listed_reasons,
    )


def _planned(
    prepared: PreparedSource,
    *,
    settings: Settings,
    language: str | None,
    request: RunRequest,
    store: UnitOfWorkFactory | None,
) -> Plan:
    """The dry run's plan; a source that cannot be listed exits 2, as a real run does."""
    try:
        return plan_backlog(
            source=prepared.location,
            language=language,
            metadata=prepared.metadata,
            store=store,
            max_wav_bytes=max_wav_bytes_for(settings.service, settings.encryption),
            min_pause_ms=settings.pipeline.min_pause_ms,
            settle_s=settings.pipeline.settle_s,
            include=request.include,
            exclude=request.exclude,
            billed_min_ms=round(settings.service.billed_min_s_per_request * 1000),
        )
    except (SourceNotFound, SourceUnreadable) as exc:
        usage_error("usage error", exc)


def _existing_store(storage: StorageSettings) -> UnitOfWorkFactory | None:
    """The store if one exists: a dry run never creates a database."""
    return open_store(storage) if database_exists(storage.database_url) else None
