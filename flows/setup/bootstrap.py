"""A run built once: settings, the parsed source, its manifest, store, lease owner, client.

Like cosmicpython's bootstrap.py: `bootstrap(settings, request)` builds a `Run` in one
place and everything after gets it injected. `medasr run` calls it before Prefect starts
(building it is the command's check of source, manifest and store) and hands the Run to
a flow it builds around it (flows/backlog_run.py `backlog_flow`); a deployment's flow
(`medasr serve`) calls it with its own parameters. The source string is parsed here,
once, into a `SourceLocation`; the manifest is read here, once. The Run is never a flow
parameter: Prefect records parameters, and the Run holds the token and an open store.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from os import PathLike
from types import TracebackType
from typing import TYPE_CHECKING

from config.errors import ConfigError
from config.settings import Settings, load_settings
from flows.setup.source_key import location_as_known
from service.client import TranscriptionClient
from service.contract import LANGUAGES, is_supported_language
from service.preflight import check_service_config
from storage import open_store
from storage.interface import UnitOfWorkFactory
from storage.owners import new_lease_owner
from storage.sources import SourceLocation, parse_source
from tasks.discovery.discover import check_source, manifest_metadata
from tasks.discovery.languages import manifest_gives_languages
from tasks.errors import SharedLimitUnavailable
from tasks.review.measured_notes import measure_earlier_reviews
from tasks.throttle.gate import RequestGate
from tasks.transcription.audio_budget import AudioBudget
from tasks.transcription.batch import BatchContext
from tasks.transcription.bookkeeping import known_sources
from tasks.transcription.progress import RunStats
from tasks.transcription.review_routing import ReviewRouting
from tasks.work.journal import Journal

if TYPE_CHECKING:  # Prefect's client: imported only by a run with a shared limit
    from tasks.throttle.global_limit import SharedLimit

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
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    manifest: str | None = None  # the metadata CSV (default: medasr.csv at the source root)
    limit: int | None = None
    max_audio_hours: float | None = None  # over MEDASR_PIPELINE__MAX_AUDIO_HOURS_PER_RUN


def backlog_request(
    *,
    source: str,
    language: str | None,
    limit: int | None = None,
    concurrency: int | None = None,
    encrypt: bool | None = None,
    batch_size: int | None = None,
    include: Sequence[str] | None = None,
    exclude: Sequence[str] | None = None,
    manifest: str | PathLike[str] | None = None,
    max_audio_hours: float | None = None,
) -> RunRequest:
    """A backlog run's request from its options as `medasr run` and the deployment's flow
    take them (globs as lists, the manifest as a path)."""
    return RunRequest(
        language=language,
        source=source,
        concurrency=concurrency,
        encrypt=encrypt,
        batch_size=batch_size,
        include=tuple(include or ()),
        exclude=tuple(exclude or ()),
        manifest=None if manifest is None else str(manifest),
        limit=limit,
        max_audio_hours=max_audio_hours,
    )


@dataclass(frozen=True)
class PreparedSource:
    """The source parsed once and its manifest read once (`prepare_source`)."""

    location: SourceLocation
    metadata: Mapping[str, Mapping[str, str]]


class Run:
    """What one run shares. A plain class on purpose: Prefect does not walk it."""

    def __init__(
        self,
        *,
        request: RunRequest,
        settings: Settings,
        store: UnitOfWorkFactory,
        source_roots: tuple[str, ...],
        source: PreparedSource | None = None,
    ) -> None:
        self.request = request
        self.settings = settings
        self.store = store
        self.source = source
        self.source_roots = source_roots  # log lines name files relative to these
        root = source.location.uri if source is not None else None
        self.source_prefix = root  # a backlog claims only its own source's items
        self.record_source = root or RERUN_SOURCE
        # A manifest that names languages makes one run of every language of its source;
        # --language is then the default of the rows without one (tasks/discovery/languages.py).
        mixed = source is not None and manifest_gives_languages(source.metadata)
        self.claim_language = None if mixed else request.language
        self.record_language = self.claim_language or ANY_LANGUAGE
        self.owner = new_lease_owner()
        self.stats = RunStats()
        self.journal = Journal.in_data_dir(settings.storage.data_dir)
        # The audio cap, shared by the head start and the flow's batches (one per run).
        self.audio_budget = AudioBudget.of_hours(settings.pipeline.max_audio_hours_per_run)

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
            shared=None if isinstance(shared, SharedLimitUnavailable) else shared,
            longest_pause_s=self.settings.service.retry_max_total_s,
        )
        if isinstance(shared, SharedLimitUnavailable):
            gate.stop(shared)  # fail closed: nothing is sent without the shared limit
        # Requests and retries are counted as they are sent (tasks/transcription/file_run.py).
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
            hold_all=self.settings.review.required == "all",
            routing=self.review_routing(),
            journal=self.journal,
            store_retry_s=self.settings.storage.store_retry_s,
            source_roots=self.source_roots,
            audio_budget=self.audio_budget,
        )

    def review_routing(self) -> ReviewRouting:
        """Which transcripts wait for a person this run; under `measured`, judged by the
        standings read once now (reviews made during the run count from the next)."""
        review = self.settings.review
        standings = []
        if review.required == "measured":
            with self.store.unit_of_work() as uow:
                measure_earlier_reviews(uow.accuracy)  # notes reviewed before they were measured
            with self.store.unit_of_work(read_only=True) as uow:
                standings = uow.accuracy.standings(window_notes=review.window_notes)
        return ReviewRouting.of(
            mode=review.required,
            min_accuracy=review.min_accuracy,
            min_notes=review.min_notes,
            sample_rate=review.effective_sample_rate(),
            standings=standings,
        )

    def close(self) -> None:
        """Close the store's connections."""
        self.store.dispose()

    def __enter__(self) -> Run:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def settings_for(request: RunRequest) -> Settings:
    """Settings loaded once, with the run's overrides applied; raises ConfigError."""
    language = request.language
    if language is not None and not is_supported_language(language):
        raise ConfigError(f"unsupported language {language!r}; use one of: {', '.join(LANGUAGES)}")
    settings = load_settings()
    hours = request.max_audio_hours
    if hours is not None and not 0 < hours <= 1_000_000:
        raise ConfigError(f"--max-audio-hours must be a number of hours above 0, got {hours:g}")
    overrides: dict[str, float | None] = {
        "concurrency": request.concurrency,
        "batch_size": request.batch_size,
        "max_audio_hours_per_run": hours,
    }
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


def prepare_source(request: RunRequest) -> PreparedSource | None:
    """Parse the source once, refuse a missing local root, read the manifest once.

    None for a rerun (no source). Raises UnsupportedSource, SourceNotFound,
    SourceUnreadable, ManifestInvalid.
    """
    if request.source is None:
        return None
    location = parse_source(request.source)
    check_source(location)
    return PreparedSource(location, manifest_metadata(location, manifest=request.manifest))


def source_as_known(
    prepared: PreparedSource, *, store: UnitOfWorkFactory, request: RunRequest
) -> PreparedSource:
    """The source under the path the store's earlier runs knew it by (flows/setup/source_key.py),
    its manifest read again for that path."""
    location = location_as_known(prepared.location, store=store)
    if location == prepared.location:
        return prepared
    return PreparedSource(location, manifest_metadata(location, manifest=request.manifest))


def bootstrap(
    settings: Settings, request: RunRequest, *, source: PreparedSource | None = None
) -> Run:
    """The run: source prepared (unless given), store opened (a new SQLite file is created
    and migrated), source roots named.

    Raises what `prepare_source` raises, ConfigError (the database URL), StoreError.
    """
    prepared = source if source is not None else prepare_source(request)
    store = open_store(settings.storage)
    try:
        if prepared is not None:
            prepared = source_as_known(prepared, store=store, request=request)
            roots: tuple[str, ...] = (prepared.location.uri,)
        else:  # a rerun names each file relative to the source it was listed under
            roots = known_sources(store)
    except BaseException:
        store.dispose()
        raise
    return Run(request=request, settings=settings, store=store, source_roots=roots, source=prepared)
