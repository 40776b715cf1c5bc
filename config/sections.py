"""The sections of the one Settings object (config/settings.py): one model per concern.

Each field has a default, a bound and a description; secrets are SecretStr. Nothing
here reads the environment: config/settings.py assembles these from MEDASR_* variables,
`.env` and the TOML file, and re-exports them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

from pydantic import (
    BaseModel,
    Field,
    SecretStr,
    field_validator,
    model_validator,
)

# The JWE key string is doubled into the 32-byte A128CBC-HS256 key (docs/service-contract.md).
JWE_KEY_STRING_BYTES = 16
_PASSWORD_QUERY_KEYS = frozenset({"password", "passwd", "pwd"})


def blank_secret_is_none(token: SecretStr | None) -> SecretStr | None:
    """A token stripped of blanks; None for an empty one (a stray space or newline from a
    secrets file would otherwise go out as "Bearer  ")."""
    if token is None:
        return None
    stripped = token.get_secret_value().strip()
    return SecretStr(stripped) if stripped else None


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
    max_answer_bytes: int = Field(
        10_000_000,
        ge=100_000,
        le=1_000_000_000,
        description=(
            "Largest answer body read from the service, the docs upload or a FHIR server; "
            "past it reading stops (answer_too_large; a delivery so answered is in doubt)."
        ),
    )
    allow_insecure_http: bool = Field(
        False, description="Allow http:// to a non-loopback host (patient audio in clear text)."
    )
    ca_bundle: Path | None = Field(None, description="Custom CA bundle (PEM) for TLS checks.")
    price_per_audio_min: float = Field(
        0.0,
        ge=0,
        le=1_000_000,
        description=(
            "The vendor's price of one billed audio minute (a number, no currency assumed); "
            "the dry run and `medasr status --by` multiply billed minutes by it."
        ),
    )
    billed_min_s_per_request: float = Field(
        0.0,
        ge=0,
        le=3600,
        description=(
            "The least audio the vendor bills per request, seconds (a shorter chunk is "
            "billed as this much); 0: billed as long as it is."
        ),
    )

    @field_validator("token", mode="after")
    @classmethod
    def _blank_token_is_missing(cls, token: SecretStr | None) -> SecretStr | None:
        return blank_secret_is_none(token)

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
        validate_default=True,  # the default's relative path is resolved too
        description="SQLAlchemy URL: SQLite file (a relative path: from the current folder) "
        "or PostgreSQL.",
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

    @field_validator("database_url", mode="after")
    @classmethod
    def _sqlite_file_absolute(cls, value: str) -> str:
        return absolute_sqlite_url(value)

    @property
    def store_location(self) -> str:
        """Where the store is, for a person: the SQLite file's path, else the redacted URL."""
        scheme, _, rest = self.database_url.partition("://")
        database = rest.partition("?")[0]
        if scheme.split("+")[0].lower() == "sqlite" and database.startswith("//"):
            return database[1:]
        return self.database_url_redacted

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
    max_audio_hours_per_run: float | None = Field(
        None,
        gt=0,
        le=1_000_000,
        description=(
            "Most audio hours one run sends (`--max-audio-hours`): a recording that would "
            "take the run past it is not sent, never half sent, and stays pending for the "
            "next run; per run, not across workers; unset: no cap."
        ),
    )
    decode_workers: int = Field(
        max(1, os.cpu_count() or 1),
        ge=1,
        le=64,
        description="Files decoded at once (ffmpeg, or libav worker processes).",
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
        900.0,
        gt=0,
        le=3600,
        description=(
            "Last-resort limit on the wait for Prefect's temporary server to start, "
            "seconds: it is waited for while its process uses CPU (a busy host is slow, "
            "not stuck) and given up on sooner if it stops using CPU or exits."
        ),
    )
    prefect_start_stall_s: float = Field(
        60.0,
        gt=0,
        le=3600,
        description=(
            "Prefect's temporary server is judged stuck, not slow, when its process has "
            "used no CPU for this long while starting, seconds."
        ),
    )


def absolute_sqlite_url(database_url: str) -> str:
    """An SQLite URL whose file path is relative, made absolute against the current folder
    once (when settings are read), so every later step and process uses the same file
    whatever its own folder; other URLs, in-memory ones and SQLite URI filenames as given."""
    scheme, sep, rest = database_url.partition("://")
    if not sep or scheme.split("+")[0].lower() != "sqlite" or is_in_memory_sqlite(database_url):
        return database_url
    database, question, query = rest.partition("?")
    path = database.removeprefix("/")
    if not database.startswith("/") or path.startswith(("/", "file:")):
        return database_url
    absolute = os.path.normpath(os.path.join(os.getcwd(), path))
    return f"{scheme}:///{absolute}{question}{query}"


def is_in_memory_sqlite(database_url: str) -> bool:
    """True for an SQLite URL without a lasting file: no path, `:memory:`, an SQLite URI
    filename `file::memory:` or `file:` (empty: a temporary database), `mode=memory`."""
    scheme, _, rest = database_url.partition("://")
    if scheme.split("+")[0].lower() != "sqlite":
        return False
    database, _, query = rest.partition("?")
    path = unquote(database.removeprefix("/"))
    path = path.removeprefix("file:")  # with uri=true, sqlite reads the path as a URI
    modes = [value.lower() for name, value in parse_qsl(query) if name.lower() == "mode"]
    return path in ("", ":memory:") or "memory" in modes
