"""Devserver fixtures and helpers (a pytest plugin, registered in tests/conftest.py).

- `devserver_factory`: `make(**config_overrides) -> RunningDevServer`, stopped at teardown.
- `devserver`: one session-wide server (token "test-token", no faults; its ledger is shared).
- `client_settings(server, **overrides)`: (ServiceSettings, EncryptionSettings) for a server.
- `make_wav_bytes(seconds=...)`, `make_tone_wav_bytes(text)`: audio to upload.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
import soundfile
from pydantic import SecretStr

from config.settings import EncryptionSettings, ServiceSettings
from devserver import DevServerConfig, RunningDevServer, start_devserver
from devserver.tone import encode_to_wav_bytes

DEVSERVER_TOKEN = "test-token"
DEVSERVER_JWE_KEY = "0123456789abcdef"  # 16 characters: a test key, never a real one
DEVSERVER_JWE_KID = "test-kid"

# Tiny backoffs: retry tests must take milliseconds, not the production half second.
_FAST_SERVICE = {
    "retry_initial_backoff_s": 0.01,
    "retry_max_backoff_s": 0.05,
    "retry_max_total_s": 20.0,
    "request_timeout_s": 10.0,
    "max_attempts": 3,
}


def client_settings(
    server: RunningDevServer, **overrides: Any
) -> tuple[ServiceSettings, EncryptionSettings]:
    """Settings pointed at `server`; overrides name fields of either model.

    Encryption is on when the server has a JWE key (override `enabled=False` to send plain).
    """
    service_fields = set(ServiceSettings.model_fields)
    encryption_fields = set(EncryptionSettings.model_fields)
    unknown = set(overrides) - service_fields - encryption_fields
    if unknown:
        raise TypeError(f"client_settings: unknown fields {sorted(unknown)}")
    service: dict[str, Any] = {**_FAST_SERVICE, "base_url": server.url}
    service["token"] = SecretStr(server.token)
    service |= {k: v for k, v in overrides.items() if k in service_fields}
    if isinstance(service["token"], str):
        service["token"] = SecretStr(service["token"])
    config = server.config
    encryption: dict[str, Any] = {
        "enabled": config.jwe_key is not None,
        "jwe_key": SecretStr(config.jwe_key) if config.jwe_key is not None else None,
        "jwe_kid": config.jwe_kid,
    }
    encryption |= {k: v for k, v in overrides.items() if k in encryption_fields}
    if isinstance(encryption["jwe_key"], str):
        encryption["jwe_key"] = SecretStr(encryption["jwe_key"])
    return ServiceSettings(**service), EncryptionSettings(**encryption)


def make_wav_bytes(
    *,
    seconds: float,
    sample_rate_hz: int = 16_000,
    channels: int = 1,
    amplitude: float = 0.1,
    seed: int = 0,
) -> bytes:
    """A PCM s16le WAV of seeded white noise (no tone symbols, so engines fall back to hash)."""
    frames = round(seconds * sample_rate_hz)
    rng = np.random.default_rng(seed)
    noise = rng.uniform(-amplitude, amplitude, size=(frames, channels))
    buffer = io.BytesIO()
    soundfile.write(buffer, noise, sample_rate_hz, format="WAV", subtype="PCM_16")
    return buffer.getvalue()


def make_tone_wav_bytes(text: str, *, sample_rate_hz: int = 16_000) -> bytes:
    """A WAV of `text` as tone dictation (the tone engine decodes it back exactly)."""
    return encode_to_wav_bytes(text, sample_rate_hz=sample_rate_hz)


@pytest.fixture
def devserver_factory() -> Iterator[Callable[..., RunningDevServer]]:
    """make(**config_overrides) -> a started devserver on a free port; all stopped after."""
    started: list[RunningDevServer] = []

    def make(**overrides: Any) -> RunningDevServer:
        config = DevServerConfig(port=0, token=DEVSERVER_TOKEN)
        overrides.setdefault("port", 0)
        server = start_devserver(config, **overrides)
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop()


@pytest.fixture(scope="session")
def devserver() -> Iterator[RunningDevServer]:
    """One default devserver for the session (token "test-token", no faults)."""
    with start_devserver(DevServerConfig(port=0, token=DEVSERVER_TOKEN)) as server:
        yield server
