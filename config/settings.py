"""The one Settings object: environment (MEDASR_*), `.env`, and an optional TOML file.

Precedence, highest first: explicit keyword arguments, environment, `.env`, the TOML
file named by MEDASR_CONFIG, defaults. Every field is reachable as
MEDASR_<SECTION>__<FIELD>; the operator-facing flat names below (MEDASR_TOKEN,
MEDASR_CONCURRENCY, ...) are aliases that win over the nested spelling.
Build it once per run with `load_settings()`; nothing else reads os.environ.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qsl, urlencode, urlsplit

from dotenv import dotenv_values
from pydantic import (
    BaseModel,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from config.errors import ConfigError
from config.names import ENV_PREFIX, check_toml_keys, known_variables, warn_unknown_variables
from config.quality import QualitySettings

# The JWE key string is doubled into the 32-byte A128CBC-HS256 key (DESIGN.md §3).
JWE_KEY_STRING_BYTES = 16
_PASSWORD_QUERY_KEYS = frozenset({"password", "passwd", "pwd"})

# Documented flat variables -> (section, field). Operators put these in cron jobs
# and Prefect deployments; the names are a contract and never change.
FLAT_VARIABLES: dict[str, tuple[str, str]] = {
    "MEDASR_ENV": ("service", "env"),
    "MEDASR_BASE_URL": ("service", "base_url"),
    "MEDASR_TOKEN": ("service", "token"),
    "MEDASR_REQUEST_TIMEOUT_S": ("service", "request_timeout_s"),
    "MEDASR_MAX_ATTEMPTS": ("service", "max_attempts"),
    "MEDASR_MAX_UPLOAD_BYTES": ("service", "max_upload_bytes"),
    "MEDASR_ALLOW_INSECURE_HTTP": ("service", "allow_insecure_http"),
    "MEDASR_CA_BUNDLE": ("service", "ca_bundle"),
    "MEDASR_ENCRYPT": ("encryption", "enabled"),
    "MEDASR_JWE_KEY": ("encryption", "jwe_key"),
    "MEDASR_JWE_KID": ("encryption", "jwe_kid"),
    "MEDASR_DATABASE_URL": ("storage", "database_url"),
    "MEDASR_DATA_DIR": ("storage", "data_dir"),
    "MEDASR_CONCURRENCY": ("pipeline", "concurrency"),
    "MEDASR_REQUESTS_PER_S": ("pipeline", "requests_per_s"),
    "MEDASR_GLOBAL_CONCURRENCY": ("pipeline", "global_concurrency"),
    "MEDASR_BATCH_SIZE": ("pipeline", "batch_size"),
    "MEDASR_LOG_LEVEL": ("pipeline", "log_level"),
    "MEDASR_PREFECT_START_TIMEOUT_S": ("pipeline", "prefect_start_timeout_s"),
    "MEDASR_DELIVER": ("delivery", "enabled"),
    "MEDASR_DELIVER_FORMAT": ("delivery", "format"),
    "MEDASR_DOCS_QUERY": ("delivery", "docs_query"),
    "MEDASR_FHIR_NOTE_CODE": ("delivery", "note_loinc_code"),
}


class ServiceSettings(BaseModel):
    """Where the transcription service is and how we talk to it."""

    env: Literal["prod", "dev"] = Field("prod", description="Which service environment to use.")
    base_url: str | None = Field(
        None, description="Explicit base URL; overrides the environment's URL when set."
    )
    prod_base_url: str = Field(
        "https://api.eka.care", description="Base URL of the production environment."
    )
    dev_base_url: str = Field(
        "https://api.dev.eka.care", description="Base URL of the development environment."
    )
    token: SecretStr | None = Field(None, description="Bearer token (a JWT) for the service.")
    request_timeout_s: float = Field(
        120.0, gt=0, le=3600, description="Timeout of one HTTP request, seconds."
    )
    max_attempts: int = Field(
        5,
        ge=1,
        le=50,
        description=(
            "Attempts budget: tries of one request inside a run for errors other than "
            "throttling (a 429 costs time, never an attempt), and runs of one item before "
            "rerun-failures stops re-queuing it."
        ),
    )
    retry_max_total_s: float = Field(
        300.0,
        gt=0,
        le=86_400,
        description=(
            "Upper bound on the time spent on one request, throttled waits included; "
            "past it the file fails and stays retryable."
        ),
    )
    retry_initial_backoff_s: float = Field(
        0.5, gt=0, le=60, description="Base of the exponential backoff, seconds."
    )
    retry_max_backoff_s: float = Field(
        30.0, gt=0, le=3600, description="Largest single backoff wait, seconds."
    )
    max_upload_bytes: int = Field(
        5_000_000,
        ge=64_000,
        le=100_000_000,
        description="Largest request body we send; the service refuses more than 5 MB.",
    )
    allow_insecure_http: bool = Field(
        False, description="Allow http:// to a non-loopback host (patient audio in clear text)."
    )
    ca_bundle: Path | None = Field(None, description="Custom CA bundle (PEM) for TLS checks.")

    @field_validator("token", mode="after")
    @classmethod
    def _blank_token_is_missing(cls, token: SecretStr | None) -> SecretStr | None:
        # A stray space or newline from a secrets file would otherwise go out as "Bearer  ".
        if token is None:
            return None
        stripped = token.get_secret_value().strip()
        return SecretStr(stripped) if stripped else None

    @property
    def effective_base_url(self) -> str:
        """The base URL to call, without a trailing slash."""
        url = self.base_url or (self.prod_base_url if self.env == "prod" else self.dev_base_url)
        return url.rstrip("/")


class EncryptionSettings(BaseModel):
    """The opt-in JWE envelope (dir + A128CBC-HS256)."""

    enabled: bool = Field(False, description="Encrypt requests as JWE (X-Encryption: JWE).")
    jwe_key: SecretStr | None = Field(
        None, description="Shared key string (16 characters; doubled into the 32-byte key)."
    )
    jwe_kid: str | None = Field(None, max_length=256, description="Identifier of the shared key.")

    @field_validator("jwe_key", mode="after")
    @classmethod
    def _key_is_16_bytes(cls, key: SecretStr | None) -> SecretStr | None:
        if key is None:
            return None
        value = key.get_secret_value()
        size = len(value.encode("utf-8"))
        if size != JWE_KEY_STRING_BYTES:
            # Lengths only: the key itself never reaches an error message.
            raise ValueError(
                f"the JWE key must be a 16-character (16-byte UTF-8) string "
                f"(got {len(value)} characters, {size} bytes)"
            )
        return key

    @model_validator(mode="after")
    def _key_when_enabled(self) -> EncryptionSettings:
        if self.enabled and self.jwe_key is None:
            raise ValueError("encryption is on but no key is set (MEDASR_JWE_KEY)")
        return self


class StorageSettings(BaseModel):
    """The SQL store."""

    # repr=False: a PostgreSQL URL may carry a password; __repr_args__ shows it redacted.
    database_url: str = Field(
        "sqlite:///./medasr.db",
        repr=False,
        description="SQLAlchemy URL: SQLite file or PostgreSQL.",
    )
    lease_s: float = Field(
        900.0, ge=5, le=86_400, description="How long a claimed item stays ours, seconds."
    )
    busy_timeout_ms: int = Field(
        30_000, ge=0, le=600_000, description="SQLite wait for a locked database, ms."
    )
    data_dir: Path = Field(
        Path(".medasr"),
        description="medasr's own files (journal of paid answers), a 0700 folder.",
    )
    store_retry_s: float = Field(
        60.0,
        ge=0,
        le=3600,
        description="How long a paid answer's store write is retried before it is journaled, s.",
    )

    @property
    def database_url_redacted(self) -> str:
        """The database URL with any password replaced by ***, for reprs and messages."""
        return redact_url_password(self.database_url)

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        yield "database_url", self.database_url_redacted
        yield from super().__repr_args__()


def redact_url_password(url: str) -> str:
    """`url` with the password of its user part and of a password= query replaced by ***."""
    try:
        parts = urlsplit(url)
        pairs = parse_qsl(parts.query, keep_blank_values=True)
        has_password = parts.password is not None
    except ValueError:  # unparseable: show nothing rather than risk the password
        return "<unparseable URL, hidden>"
    has_password_query = any(name.lower() in _PASSWORD_QUERY_KEYS for name, _ in pairs)
    redacted = url
    # Edit the string in place: urlunsplit would drop the "//" of sqlite:///path.
    if has_password:
        userinfo, _, hostinfo = parts.netloc.rpartition("@")
        redacted = redacted.replace(parts.netloc, f"{userinfo.partition(':')[0]}:***@{hostinfo}", 1)
    if has_password_query:
        hidden = [(n, "***" if n.lower() in _PASSWORD_QUERY_KEYS else v) for n, v in pairs]
        redacted = redacted.replace("?" + parts.query, "?" + urlencode(hidden, safe="*"), 1)
    return redacted


class PipelineSettings(BaseModel):
    """How a run moves through a backlog."""

    concurrency: int = Field(
        8,
        ge=1,
        le=256,
        description="Most requests in flight at once; medasr adapts below it when throttled.",
    )
    requests_per_s: float | None = Field(
        None,
        gt=0,
        le=10_000,
        description=(
            "Optional cap on requests started per second (shared by every worker when "
            "MEDASR_GLOBAL_CONCURRENCY is set)."
        ),
    )
    global_concurrency: int | None = Field(
        None,
        ge=1,
        le=10_000,
        description=(
            "Requests in flight across every worker of one Prefect server (the Prefect "
            "global concurrency limit medasr-requests); unset: no shared limit."
        ),
    )
    batch_size: int = Field(
        50, ge=1, le=10_000, description="Files per Prefect task run (a claim batch)."
    )
    decode_workers: int = Field(
        max(1, os.cpu_count() or 1),
        ge=1,
        le=64,
        description="Files decoded at once (ffmpeg processes).",
    )
    retry_delay_s: float = Field(
        600.0, ge=0, le=7 * 86_400, description="Wait before a failed item may be retried."
    )
    min_pause_ms: int = Field(250, ge=20, le=5_000, description="Shortest pause to cut in, ms.")
    ffmpeg_timeout_s: float = Field(
        3600.0, gt=0, le=86_400, description="Longest one ffmpeg decode may run, seconds."
    )
    settle_s: float = Field(
        2.0, ge=0, le=86_400, description="Files modified more recently than this are skipped."
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        "INFO", description="Log level of medasr's own loggers."
    )
    prefect_start_timeout_s: float = Field(
        120.0,
        gt=0,
        le=3600,
        description=(
            "How long a run waits for Prefect's temporary server to start, seconds "
            "(a loaded 2-core host needs more than Prefect's own 20 s)."
        ),
    )


class DeliverySettings(BaseModel):
    """Uploading finished transcripts to the patient record (POST /mr/api/v2/docs)."""

    enabled: bool = Field(
        False, description="Deliver done transcripts at the end of each nightly backlog run."
    )
    format: Literal["txt", "fhir"] = Field(
        "txt", description="What the nightly delivery uploads: txt or a FHIR DocumentReference."
    )
    docs_query: str = Field(
        "",
        max_length=2000,
        description="Query-string template of the upload, filled from the manifest's columns.",
    )
    note_loinc_code: str = Field(
        "11506-3",
        pattern=r"^[0-9]{1,7}-[0-9]$",
        description="LOINC code of the FHIR DocumentReference type (11506-3: progress note).",
    )


class Settings(BaseSettings):
    """Everything medasr can be told, grouped by concern."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter="__",
        env_file=".env",
        extra="ignore",
    )

    service: ServiceSettings = Field(default_factory=ServiceSettings)  # type: ignore[arg-type]
    encryption: EncryptionSettings = Field(default_factory=EncryptionSettings)  # type: ignore[arg-type]
    storage: StorageSettings = Field(default_factory=StorageSettings)  # type: ignore[arg-type]
    pipeline: PipelineSettings = Field(default_factory=PipelineSettings)  # type: ignore[arg-type]
    quality: QualitySettings = Field(default_factory=QualitySettings)  # type: ignore[arg-type]
    delivery: DeliverySettings = Field(default_factory=DeliverySettings)  # type: ignore[arg-type]

    @model_validator(mode="after")
    def _durable_database(self) -> Settings:
        # Every result would vanish when the command exits, after being paid for.
        if is_in_memory_sqlite(self.storage.database_url):
            raise ValueError(
                "MEDASR_DATABASE_URL: an in-memory SQLite database forgets every result "
                "when medasr exits; name a file (sqlite:///./medasr.db) or a PostgreSQL server"
            )
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (
            init_settings,
            _FlatSource(settings_cls, from_dotenv=False),
            env_settings,
            _FlatSource(settings_cls, from_dotenv=True),
            dotenv_settings,
            _TomlSource(settings_cls),
        )


class _FlatSource(PydanticBaseSettingsSource):
    """Reads the documented flat MEDASR_* names from the environment or `.env`."""

    def __init__(self, settings_cls: type[BaseSettings], *, from_dotenv: bool) -> None:
        super().__init__(settings_cls)
        self._from_dotenv = from_dotenv

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        values = _dotenv_values() if self._from_dotenv else dict(os.environ)
        nested: dict[str, dict[str, Any]] = {}
        for name, (section, field) in FLAT_VARIABLES.items():
            raw = values.get(name)
            if raw is not None and raw != "":
                nested.setdefault(section, {})[field] = raw
        return nested


class _TomlSource(PydanticBaseSettingsSource):
    """Reads the TOML file named by MEDASR_CONFIG (sections match the nested models)."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        path = _toml_path()
        if not path:
            return {}
        data = _read_toml(path)
        check_toml_keys(data, sections=_sections(), path=path)
        return data


def _toml_path() -> str | None:
    return os.environ.get("MEDASR_CONFIG") or _dotenv_values().get("MEDASR_CONFIG") or None


def _read_toml(path: str) -> dict[str, Any]:
    """The TOML file's tables; raises ConfigError (unreadable, not TOML, not UTF-8)."""
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except OSError as exc:
        raise ConfigError(f"MEDASR_CONFIG: cannot read {path}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"MEDASR_CONFIG: {path} is not valid TOML: {exc}") from exc
    except UnicodeDecodeError as exc:  # tomllib reads UTF-8 only
        raise ConfigError(f"MEDASR_CONFIG: {path} is not UTF-8 text") from exc


def _sections() -> dict[str, type[BaseModel]]:
    """The Settings sections by name (their TOML tables), each with its model."""
    return {name: field.annotation for name, field in Settings.model_fields.items()}  # type: ignore[misc]


def is_in_memory_sqlite(database_url: str) -> bool:
    """True for an SQLite URL without a file: sqlite://, sqlite:///, :memory:, mode=memory."""
    scheme, _, rest = database_url.partition("://")
    if scheme.split("+")[0].lower() != "sqlite":
        return False
    database, _, query = rest.partition("?")
    return database in ("", "/", "/:memory:") or "mode=memory" in query


def _dotenv_values() -> dict[str, str]:
    if not Path(".env").is_file():
        return {}
    return {k: v for k, v in dotenv_values(".env").items() if v is not None}


def variable_name(loc: tuple[int | str, ...]) -> str:
    """The environment variable an operator sets for a validation error location."""
    parts = tuple(str(p) for p in loc[:2])
    for name, target in FLAT_VARIABLES.items():
        if target == parts:
            return name
    if len(parts) == 1:
        return f"{ENV_PREFIX}{parts[0].upper()}"
    return f"{ENV_PREFIX}{parts[0].upper()}__{parts[1].upper()}"


def _setting_name(loc: tuple[int | str, ...], *, environment: dict[str, str]) -> str:
    """What the operator wrote a bad value in: the variable if set, else the TOML key."""
    name = variable_name(loc)
    nested = f"{ENV_PREFIX}{'__'.join(str(p).upper() for p in loc[:2])}"
    if environment.get(name) or environment.get(nested):
        return name
    path = _toml_path()
    if path is not None and len(loc) >= 2:
        table = _read_toml(path).get(str(loc[0]))
        if isinstance(table, dict) and str(loc[1]) in table:
            return f"[{loc[0]}] {loc[1]} in {path}"
    return name


_pinned: Settings | None = None


@contextmanager
def pinned_settings(settings: Settings) -> Iterator[Settings]:
    """Make `load_settings()` return `settings` in this process (demo and tests).

    Flows build their own settings (secrets never travel as Prefect parameters), so a
    caller that already holds a Settings object pins it here instead.
    """
    global _pinned  # process-wide on purpose; see docstring
    previous, _pinned = _pinned, settings
    try:
        yield settings
    finally:
        _pinned = previous


def load_settings(**overrides: Any) -> Settings:
    """Build the Settings once; raises ConfigError with one line naming the variable."""
    if _pinned is not None and not overrides:
        return _pinned
    environment = {**_dotenv_values(), **os.environ}
    warn_unknown_variables(
        environment, known=known_variables(sections=_sections(), flat=FLAT_VARIABLES)
    )
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, environment=environment)) from None


# Values of these are never echoed back: they are secrets or may hold a password.
_SECRET_VARIABLES = frozenset({"MEDASR_TOKEN", "MEDASR_JWE_KEY", "MEDASR_DATABASE_URL"})


def _describe(exc: ValidationError, *, environment: dict[str, str]) -> str:
    lines = []
    for error in exc.errors(include_url=False):
        message = error["msg"].removeprefix("Value error, ")
        if ENV_PREFIX in message:  # a cross-field check that already names its variable
            lines.append(message)
            continue
        name = _setting_name(tuple(error["loc"]), environment=environment)
        got = error.get("input")
        secret = variable_name(tuple(error["loc"])) in _SECRET_VARIABLES
        if not secret and isinstance(got, str | int | float) and got != "":
            message = f"{message} (got {str(got)[:40]!r})"
        lines.append(f"{name}: {message}")
    return "; ".join(lines)
