"""The one Settings object: environment (MEDASR_*), `.env`, and an optional TOML file.

Precedence, highest first: explicit keyword arguments, environment, `.env`, the TOML
file named by MEDASR_CONFIG, defaults. Every field is reachable as
MEDASR_<SECTION>__<FIELD>; the operator-facing flat names below (MEDASR_TOKEN,
MEDASR_CONCURRENCY, ...) are aliases that win over the nested spelling.
Build it once per run with `load_settings()`; nothing else reads os.environ.
"""

from __future__ import annotations

import io
import os
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dotenv import dotenv_values
from dotenv.parser import parse_stream
from pydantic import (
    BaseModel,
    Field,
    ValidationError,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from config.delivery import DeliverySettings, DeliveryTargetSettings
from config.errors import ConfigError
from config.names import ENV_PREFIX, check_toml_keys, known_variables, warn_unknown_variables
from config.quality import QualitySettings
from config.sections import (
    JWE_KEY_STRING_BYTES,
    EncryptionSettings,
    PipelineSettings,
    ServiceSettings,
    StorageSettings,
    is_in_memory_sqlite,
    redact_url_password,
)
from config.workstation import ReviewSettings, WebSettings

# The sections are re-exported: callers import every settings name from config.settings.
__all__ = [
    "ENV_PREFIX",
    "FLAT_VARIABLES",
    "JWE_KEY_STRING_BYTES",
    "DeliverySettings",
    "DeliveryTargetSettings",
    "EncryptionSettings",
    "PipelineSettings",
    "ReviewSettings",
    "ServiceSettings",
    "Settings",
    "StorageSettings",
    "WebSettings",
    "load_settings",
    "pinned_settings",
    "redact_url_password",
]

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
    "MEDASR_FHIR_TOKEN": ("delivery", "fhir_token"),
}


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
    review: ReviewSettings = Field(default_factory=ReviewSettings)  # type: ignore[arg-type]
    web: WebSettings = Field(default_factory=WebSettings)  # type: ignore[arg-type]

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


# Secrets whose blank value means "not given" (refused where one is needed, by name).
_BLANK_IS_MISSING = frozenset({"MEDASR_TOKEN", "MEDASR_JWE_KEY", "MEDASR_FHIR_TOKEN"})


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
            if raw == "" and name not in _BLANK_IS_MISSING:
                # `MEDASR_BASE_URL=$URL` with $URL unset: the default would send the
                # recordings elsewhere, or open another store, without a word.
                raise ConfigError(
                    f"{name} is set but empty: give it a value, or unset it for the default"
                )
            if raw:
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


def _dotenv_values() -> dict[str, str]:
    """The current folder's `.env`; raises ConfigError (unreadable, not UTF-8)."""
    path = Path(".env")
    if not path.is_file():
        return {}
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f".env: cannot read {path.absolute()}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:  # python-dotenv reads UTF-8 only
        raise ConfigError(f".env: {path.absolute()} is not UTF-8 text") from exc
    _require_readable_lines(text, path=path)
    values = dotenv_values(stream=io.StringIO(text))
    return {k: v for k, v in values.items() if v is not None}


def _require_readable_lines(text: str, *, path: Path) -> None:
    """ConfigError naming the first line python-dotenv cannot read (never its text: it
    may hold a token); python-dotenv itself only warns, unnamed, and drops the line."""
    for binding in parse_stream(io.StringIO(text)):
        if binding.error:
            raise ConfigError(
                f".env: {path.absolute()}: line {binding.original.line} is not NAME=value "
                "(an unclosed quote?); fix or remove it"
            )


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
_SECRET_VARIABLES = frozenset(
    {"MEDASR_TOKEN", "MEDASR_JWE_KEY", "MEDASR_DATABASE_URL", "MEDASR_FHIR_TOKEN"}
)


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
