"""A run built once: settings, source roots, store, lease owner, client and request gate.

Like cosmicpython's bootstrap: built in one place, then injected. `medasr run` builds it
before Prefect starts (building it is the command's check of settings and store) and
hands it to the flow through a context variable, never as a flow parameter: Prefect
records and logs parameters, and the context holds the token and an open store. A flow
called with parameters only (`medasr serve`'s deployments, tests) builds its own from
the same `RunRequest`, and closes it when it ends.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from config.errors import ConfigError
from config.settings import Settings, load_settings
from service.client import TranscriptionClient
from service.contract import LANGUAGES, is_supported_language
from service.preflight import check_service_config
from storage import open_store
from storage.interface import UnitOfWorkFactory
from storage.owners import new_lease_owner
from storage.sources import normalize_source
from tasks.discovery.discover import Discovery
from tasks.errors import SharedLimitUnavailable
from tasks.throttle.gate import RequestGate
from tasks.throttle.global_limit import SharedLimit
from tasks.transcription.progress import RunStats
from tasks.transcription.runs import known_sources
from tasks.transcription.transcribe import BatchContext
from tasks.work.journal import Journal

# What the run row names as the source and language of a rerun over every source.
RERUN_SOURCE = "(failures)"
ANY_LANGUAGE = "*"


@dataclass(frozen=True)
class RunRequest:
    """The plain parameters a run is built from: a flow's own parameters, nothing secret.

    `source` is None for a rerun of failures (every source it has seen).
    """

    language: str | None
    source: str | None = None
    concurrency: int | None = None
    encrypt: bool | None = None
    batch_size: int | None = None


class RunContext:
    """What one run shares. A plain class on purpose: Prefect does not walk it."""

    def __init__(
        self,
        *,
        request: RunRequest,
        settings: Settings,
        store: UnitOfWorkFactory,
        source_roots: tuple[str, ...],
    ) -> None:
        self.request = request
        self.settings = settings
        self.store = store
        self.source_roots = source_roots  # log lines name files relative to these
        root = normalize_source(request.source) if request.source is not None else None
        self.source_prefix = root  # a backlog claims only its own source's items
        self.record_source = root or RERUN_SOURCE
        self.record_language = request.language or ANY_LANGUAGE
        self.owner = new_lease_owner()
        self.stats = RunStats()
        self.journal = Journal(settings.storage.data_dir / "journal")
        # The source listed and registered before the flow started (while Prefect's server
        # booted), if the command did so: the flow reports it, or raises what it raised.
        self.listed: Future[Discovery] | None = None

    def batch_context(self, *, shared: SharedLimit | SharedLimitUnavailable | None) -> BatchContext:
        """The client, the request gate and what every batch shares; call once per run."""
        pipeline = self.settings.pipeline
        ceiling = pipeline.concurrency
        if pipeline.global_concurrency is not None:
            # More contenders than shared slots only queue at the Prefect server (and
            # lengthen its Retry-After for everyone): one worker never needs more.
            ceiling = min(ceiling, pipeline.global_concurrency)
        gate = RequestGate(
            concurrency=ceiling,
            requests_per_s=pipeline.requests_per_s,
            shared=shared if isinstance(shared, SharedLimit) else None,
        )
        if isinstance(shared, SharedLimitUnavailable):
            gate.stop(shared)  # fail closed: nothing is sent without the shared limit
        # Requests and retries are counted as they are sent (tasks/transcription/transcribe.py).
        client = TranscriptionClient(self.settings.service, self.settings.encryption)
        return BatchContext(
            pipeline=pipeline,
            store=self.store,
            client=client,
            gate=gate,
            owner=self.owner,
            lease_s=self.settings.storage.lease_s,
            stats=self.stats,
            quality=self.settings.quality,
            journal=self.journal,
            store_retry_s=self.settings.storage.store_retry_s,
            source_roots=self.source_roots,
        )

    def close(self) -> None:
        """Close the store's connections."""
        self.store.dispose()


def settings_for(request: RunRequest) -> Settings:
    """Settings loaded once, with the run's overrides applied; raises ConfigError."""
    language = request.language
    if language is not None and not is_supported_language(language):
        raise ConfigError(f"unsupported language {language!r}; use one of: {', '.join(LANGUAGES)}")
    settings = load_settings()
    overrides = {"concurrency": request.concurrency, "batch_size": request.batch_size}
    pipeline = settings.pipeline.model_copy(
        update={k: v for k, v in overrides.items() if v is not None}
    )
    encryption = settings.encryption
    if request.encrypt is not None:
        encryption = encryption.model_copy(update={"enabled": request.encrypt})
        if request.encrypt and encryption.jwe_key is None:
            raise ConfigError("--encrypt needs a key: set MEDASR_JWE_KEY (and MEDASR_JWE_KID)")
    return settings.model_copy(update={"pipeline": pipeline, "encryption": encryption})


def checked_settings(request: RunRequest) -> Settings:
    """`settings_for`, with the service settings checked too; raises ConfigError."""
    settings = settings_for(request)
    check_service_config(service=settings.service, encryption=settings.encryption)
    return settings


def open_run_context(request: RunRequest, *, settings: Settings | None = None) -> RunContext:
    """Open the store (a new SQLite file is created and migrated) and name the source roots.

    Raises ConfigError (settings, the database URL) and StoreError (the database).
    """
    settings = settings if settings is not None else settings_for(request)
    store = open_store(settings.storage)
    try:
        if request.source is not None:
            roots: tuple[str, ...] = (normalize_source(request.source),)
        else:  # a rerun names each file relative to the source it was listed under
            roots = known_sources(store)
    except BaseException:
        store.dispose()
        raise
    return RunContext(request=request, settings=settings, store=store, source_roots=roots)


_prepared: ContextVar[RunContext | None] = ContextVar("medasr_run_context", default=None)


@contextmanager
def prepared_run(run: RunContext) -> Iterator[RunContext]:
    """While active, a flow called with `run.request`'s parameters uses `run`."""
    token = _prepared.set(run)
    try:
        yield run
    finally:
        _prepared.reset(token)


@contextmanager
def run_context_for(request: RunRequest) -> Iterator[RunContext]:
    """The context prepared for exactly this request, else one built here and closed after."""
    prepared = _prepared.get()
    if prepared is not None and prepared.request == request:
        yield prepared
        return
    run = open_run_context(request)
    try:
        yield run
    finally:
        run.close()
