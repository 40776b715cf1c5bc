"""The transcription client: one POST /voice/get-asr per chunk (docs/service-contract.md).

A thin client on `ServiceSession` (service/http_client.py), which owns the transport, TLS,
JWE, the byte cap, retries and the status table. What is this endpoint's own: the
languages the contract accepts (refused here before a byte is sent), the chunk as a
multipart `file` of type audio/wav, and the answer's `text`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

import httpx

from config.settings import EncryptionSettings, ServiceSettings
from service import jwe
from service.answers import json_object_of
from service.contract import (
    LANGUAGES,
    MULTIPART_OVERHEAD_BYTES,
    TRANSCRIBE_PATH,
    UPLOAD_CONTENT_TYPE,
)
from service.endpoint import FilePart
from service.errors import InvalidResponse, RequestRejected
from service.http_client import Pacing
from service.retrying import RetryEvent
from service.session_client import SessionClient

__all__ = ["RetryEvent", "Transcription", "TranscriptionClient", "max_wav_bytes_for"]


@dataclass(frozen=True)
class Transcription:
    """The text of one chunk and everything else the service said about it."""

    text: str
    extras: dict[str, Any]  # every other field of the response JSON (txn_id, audio_duration)
    attempts: int  # HTTP attempts this call took (1 = no retry)
    latency_ms: float  # wall time of the successful attempt


def max_wav_bytes_for(service: ServiceSettings, encryption: EncryptionSettings) -> int:
    """Largest chunk WAV (bytes) whose request body fits service.max_upload_bytes.

    Plain: the cap minus the multipart framing. Encrypted: the cap applies to the JWE
    body (about 1.8x the WAV). Raises EncryptionError if the cap cannot hold any file.
    """
    kid = encryption.jwe_kid if encryption.enabled else None
    return _max_wav_bytes(service.max_upload_bytes, encrypted=encryption.enabled, kid=kid)


def _max_wav_bytes(cap_bytes: int, *, encrypted: bool, kid: str | None) -> int:
    if not encrypted:
        return cap_bytes - MULTIPART_OVERHEAD_BYTES
    return jwe.max_file_bytes_for_body(cap_bytes, kid=kid)


class TranscriptionClient(SessionClient):
    """Async client of POST /voice/get-asr; raises the service/errors.py tree, nothing else.

    Constructed as every SessionClient: (service, encryption, *, http, on_retry, session).
    """

    path = TRANSCRIBE_PATH
    label = "transcribe"
    too_large_advice = "; split the audio into smaller chunks"
    # A 413 is a permanent failure: only --include-permanent re-queues it.
    refused_advice = (
        "; lower MEDASR_MAX_UPLOAD_BYTES under the service's limit, then "
        "`medasr rerun-failures --include-permanent` sends only the audio not yet answered"
    )

    @property
    def max_wav_bytes(self) -> int:
        """Largest chunk WAV (bytes, header included) whose request body fits the upload cap."""
        key = self._caller.endpoint.key
        kid = key.kid if key is not None else None
        return _max_wav_bytes(
            self._caller.endpoint.max_body_bytes, encrypted=key is not None, kid=kid
        )

    async def transcribe(
        self,
        wav_bytes: bytes,
        *,
        language: str,
        filename: str = "chunk-0001.wav",
        before_attempt: Callable[[], Awaitable[None]] | None = None,
        around_attempt: Callable[[], AbstractAsyncContextManager[None]] | None = None,
    ) -> Transcription:
        """Send one WAV chunk, retrying transient failures within retry_max_total_s seconds.

        `around_attempt` is entered around every HTTP attempt (a concurrency limiter that
        sees how it ended), `before_attempt` awaited inside it before the request (a rate
        limiter); either may raise to stop the call. A 429 uses no attempt of max_attempts,
        only time. Raises the service/errors.py tree (the last transient error once a budget
        is spent).
        """
        if language not in LANGUAGES:
            raise RequestRejected(
                f"unsupported language {language[:16]!r}; use one of {', '.join(LANGUAGES)}"
            )
        chunk = FilePart(wav_bytes, filename, UPLOAD_CONTENT_TYPE, noun="WAV file")
        reply = await self._caller.post(
            chunk,
            read=self._read_text,
            params=[("language", language)],
            pacing=Pacing(before=before_attempt, around=around_attempt),
        )
        text, extras = reply.value
        return Transcription(
            text=text, extras=extras, attempts=reply.attempts, latency_ms=reply.latency_ms
        )

    def _read_text(self, response: httpx.Response) -> tuple[str, dict[str, Any]]:
        body = json_object_of(
            response, key=self._caller.endpoint.key, answered="the service answered"
        )
        text = body.get("text")
        if not isinstance(text, str):
            status = response.status_code
            raise InvalidResponse(
                f"the service answered HTTP {status} without a 'text' string", status=status
            )
        return text, {name: value for name, value in body.items() if name != "text"}
