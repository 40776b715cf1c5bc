"""One transcription through a fresh `TranscriptionClient` against a devserver, for tests."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from devserver import RunningDevServer
from service.client import RetryEvent, Transcription, TranscriptionClient
from tests.servers import client_settings, make_wav_bytes

WAV = make_wav_bytes(seconds=0.5)  # seeded noise: the same bytes on every call


def transcribe(
    server: RunningDevServer,
    wav: bytes = WAV,
    *,
    http: httpx.AsyncClient | None = None,
    events: list[RetryEvent] | None = None,
    language: str = "en-IN",
    filename: str = "chunk-0001.wav",
    **overrides: Any,
) -> Transcription:
    """One call with `client_settings(server, **overrides)`, appending retry events to `events`."""
    service, encryption = client_settings(server, **overrides)
    on_retry = events.append if events is not None else None

    async def call() -> Transcription:
        async with TranscriptionClient(service, encryption, http=http, on_retry=on_retry) as c:
            return await c.transcribe(wav, language=language, filename=filename)

    return asyncio.run(call())
