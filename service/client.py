"""The transcription client: one POST per chunk, typed errors, bounded retries (DESIGN.md §3).

Everything the contract would refuse (language, size, missing token, clear-text transport)
is refused here before a byte is sent. httpx exceptions and HTTP statuses become the
service/errors.py tree in one place (`_exchange`, `error_for_status`). Logs carry
statuses, attempts, latencies and byte counts: never the token, the key or any text.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import httpx
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type
from tenacity.wait import wait_random_exponential

from config.errors import ConfigError
from config.settings import EncryptionSettings, ServiceSettings
from service import jwe
from service.contract import (
    LANGUAGES,
    MULTIPART_OVERHEAD_BYTES,
    TRANSCRIBE_PATH,
    UPLOAD_CONTENT_TYPE,
    UPLOAD_FIELD,
)
from service.errors import (
    CredentialsRejected,
    InvalidResponse,
    PayloadTooLarge,
    RequestRejected,
    ServiceUnavailable,
    Throttled,
)
from service.status import certificate_failure, check_transport, error_for_status, tls_verify

logger = logging.getLogger(__name__)

# A 500 means "file not passed" in the spec; we always pass one, so it is a server fault,
# but one that rarely heals on its own: give it a smaller budget.
_SERVER_FAULT_MAX_ATTEMPTS = 2
_FULL_BUDGET_STATUSES = frozenset({429, 502, 503, 504})
# An idle pooled connection is dropped after this many seconds: under the 5 s after which
# uvicorn (the devserver) and many servers close one. At httpx's own default (also 5 s)
# a request can go out on a connection the server is closing at that moment: it never
# reaches the service, fails, and is sent again (a retry the service never saw).
KEEPALIVE_EXPIRY_S = 2.0
# An attempt with less time left than this could only time out.
_LEAST_ATTEMPT_S = 0.1


@dataclass(frozen=True)
class Transcription:
    """The text of one chunk and everything else the service said about it."""

    text: str
    extras: dict[str, Any]  # every other field of the response JSON (txn_id, audio_duration)
    attempts: int  # HTTP attempts this call took (1 = no retry)
    latency_ms: float  # wall time of the successful attempt


@dataclass(frozen=True)
class RetryEvent:
    """One retry about to happen; passed to on_retry. No secrets, no text."""

    attempt: int  # the attempt that failed (1-based)
    wait_s: float  # how long we wait before the next one
    error_kind: str
    status: int | None


@dataclass
class _Deadline:
    """When a call's retry budget runs out (time.monotonic() seconds); moved by pacing."""

    at_s: float


@dataclass(frozen=True)
class _Upload:
    """What one call sends, checked once and reused by every attempt."""

    wav_bytes: bytes = field(repr=False)
    language: str
    filename: str
    token: str = field(repr=False)  # never in a repr, a log line or a traceback's locals dump


def max_wav_bytes_for(service: ServiceSettings, encryption: EncryptionSettings) -> int:
    """Largest chunk WAV (bytes) whose request body fits service.max_upload_bytes.

    Plain: the cap minus the multipart framing. Encrypted: the cap applies to the JWE
    body (about 1.8x the WAV). Raises EncryptionError if the cap cannot hold any file.
    """
    cap = service.max_upload_bytes
    if not encryption.enabled:
        return cap - MULTIPART_OVERHEAD_BYTES
    return jwe.max_file_bytes_for_body(cap, kid=encryption.jwe_kid)


class TranscriptionClient:
    """Async client of POST /voice/get-asr; raises the service/errors.py tree, nothing else.

    Construction raises ConfigError (bad URL or CA bundle; its InsecureTransport for
    http:// to a non-loopback host without permission) or EncryptionError (unusable JWE
    key, or a cap too small for any encrypted file). `service.preflight` checks the same
    settings up front and reports each as a ConfigError.
    """

    _path = TRANSCRIBE_PATH  # service/docs_client.py reuses this machinery for another path

    def __init__(
        self,
        service: ServiceSettings,
        encryption: EncryptionSettings,
        *,
        http: httpx.AsyncClient | None = None,
        on_retry: Callable[[RetryEvent], None] | None = None,
    ) -> None:
        self._service = service
        self._url = check_transport(
            service.effective_base_url + self._path,
            allow_insecure_http=service.allow_insecure_http,
        )
        self._key = _key_of(encryption)
        self._on_retry = on_retry
        self._owns_http = http is None
        self._http = http or httpx.AsyncClient(
            verify=tls_verify(service.ca_bundle),
            timeout=httpx.Timeout(service.request_timeout_s),
            follow_redirects=False,
            limits=httpx.Limits(keepalive_expiry=KEEPALIVE_EXPIRY_S),
        )
        self._max_wav_bytes = max_wav_bytes_for(service, encryption)
        self._backoff = wait_random_exponential(
            multiplier=service.retry_initial_backoff_s, max=service.retry_max_backoff_s
        )

    @property
    def max_wav_bytes(self) -> int:
        """Largest chunk WAV (bytes, header included) whose request body fits the upload cap."""
        return self._max_wav_bytes

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
        upload = self._checked_upload(wav_bytes, language=language, filename=filename)
        # One clock for the whole call: attempts and backoff waits come out of this budget;
        # waiting in the hooks (our own limits) does not.
        deadline = _Deadline(time.monotonic() + self._service.retry_max_total_s)
        result: Transcription | None = None
        async for attempt in self._retrying(deadline=deadline):
            with attempt:
                number = attempt.retry_state.attempt_number
                waited_from_s = time.monotonic()
                async with around_attempt() if around_attempt else nullcontext():
                    if before_attempt is not None:
                        await before_attempt()
                    deadline.at_s += time.monotonic() - waited_from_s
                    result = await self._send_once(upload, attempt=number, deadline=deadline)
        if result is None:  # tenacity re-raises the last error before we get here
            raise ServiceUnavailable("the request was not attempted")
        return result

    async def aclose(self) -> None:
        """Close the connection pool if this client created it."""
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> TranscriptionClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    # -- before sending -------------------------------------------------------------------

    def _checked_upload(self, wav_bytes: bytes, *, language: str, filename: str) -> _Upload:
        """What to send; raises RequestRejected, CredentialsRejected or PayloadTooLarge."""
        if language not in LANGUAGES:
            raise RequestRejected(
                f"unsupported language {language[:16]!r}; use one of {', '.join(LANGUAGES)}"
            )
        if self._service.token is None:  # ServiceSettings turns a blank token into None
            raise CredentialsRejected("no token is set; set MEDASR_TOKEN")
        token = self._service.token.get_secret_value()
        self._check_size(len(wav_bytes))
        return _Upload(wav_bytes=wav_bytes, language=language, filename=filename, token=token)

    def _check_size(self, wav_size_bytes: int) -> None:
        cap = self._service.max_upload_bytes
        if self._key is not None:
            body_bytes = jwe.encrypted_upload_body_bytes(wav_size_bytes, kid=self._key.kid)
            _refuse_if_over(body_bytes, cap=cap, what="encrypted request body")
        elif wav_size_bytes > cap:
            _refuse_if_over(wav_size_bytes, cap=cap, what="WAV file")

    def _build_request(self, upload: _Upload) -> httpx.Request:
        params = {"language": upload.language}
        headers = {"Authorization": f"Bearer {upload.token}"}
        timeout = httpx.Timeout(self._service.request_timeout_s)
        if self._key is None:
            files = {UPLOAD_FIELD: (upload.filename, upload.wav_bytes, UPLOAD_CONTENT_TYPE)}
            return self._http.build_request(
                "POST", self._url, params=params, headers=headers, files=files, timeout=timeout
            )
        # A fresh IV per request: every attempt encrypts anew.
        plaintext = jwe.file_upload_plaintext(upload.wav_bytes)
        envelope = jwe.encrypt_request(plaintext, key=self._key)
        content = json.dumps(envelope, separators=(",", ":")).encode("ascii")
        headers |= {"X-Encryption": "JWE", "Content-Type": "application/json"}
        return self._http.build_request(
            "POST", self._url, params=params, headers=headers, content=content, timeout=timeout
        )

    # -- one attempt ----------------------------------------------------------------------

    async def _send_once(
        self, upload: _Upload, *, attempt: int, deadline: _Deadline
    ) -> Transcription:
        request = self._build_request(upload)
        body_bytes = int(request.headers.get("content-length", "0"))
        _refuse_if_over(body_bytes, cap=self._service.max_upload_bytes, what="request body")
        # A late attempt gets only what is left of the call's budget, so the total stays bounded.
        timeout_s = min(self._service.request_timeout_s, deadline.at_s - time.monotonic())
        if timeout_s <= 0:
            raise ServiceUnavailable("no time was left in the retry budget for another attempt")
        started = time.perf_counter()
        response = await self._exchange(request, timeout_s=timeout_s)
        latency_ms = (time.perf_counter() - started) * 1000
        logger.debug(
            "transcribe attempt=%d status=%d latency_ms=%.1f request_bytes=%d response_bytes=%d",
            attempt,
            response.status_code,
            latency_ms,
            body_bytes,
            len(response.content),
        )
        if not response.is_success:
            raise error_for_status(response, sent_bytes=body_bytes, token=upload.token)
        text, extras = self._parse_success(response)
        return Transcription(text=text, extras=extras, attempts=attempt, latency_ms=latency_ms)

    async def _exchange(self, request: httpx.Request, *, timeout_s: float) -> httpx.Response:
        """The answer to one request; raises ServiceUnavailable or TlsNotVerified (terminal)."""
        try:
            # httpx timeouts are per read/write; this bounds the whole exchange.
            async with asyncio.timeout(timeout_s):
                return await self._http.send(request)
        except (TimeoutError, httpx.TimeoutException) as exc:
            shown_s = round(timeout_s, 2)
            raise ServiceUnavailable(f"the service did not answer within {shown_s:g} s") from exc
        except httpx.HTTPError as exc:
            tls_failure = certificate_failure(exc)
            if tls_failure is not None:  # the same certificate fails the same way: no retry
                raise tls_failure from exc
            raise ServiceUnavailable(f"could not reach the service ({type(exc).__name__})") from exc

    def _parse_success(self, response: httpx.Response) -> tuple[str, dict[str, Any]]:
        status = response.status_code
        try:
            body = response.json()
        except ValueError as exc:
            raise InvalidResponse(
                f"the service answered HTTP {status} with a body that is not JSON "
                f"({len(response.content)} bytes)",
                status=status,
            ) from exc
        if jwe.is_encrypted_envelope(body):
            body = self._decrypt(body, status=status)
        if not isinstance(body, dict):
            raise InvalidResponse(
                f"the service answered HTTP {status} with JSON that is not an object",
                status=status,
            )
        text = body.get("text")
        if not isinstance(text, str):
            raise InvalidResponse(
                f"the service answered HTTP {status} without a 'text' string", status=status
            )
        return text, {name: value for name, value in body.items() if name != "text"}

    def _decrypt(self, envelope: object, *, status: int) -> object:
        if self._key is None:
            raise InvalidResponse(
                "the service sent an encrypted response but encryption is off; "
                "set MEDASR_ENCRYPT=true and MEDASR_JWE_KEY",
                status=status,
            )
        plaintext = jwe.decrypt_response(envelope, key=self._key)
        try:
            return json.loads(plaintext)
        except ValueError as exc:
            raise InvalidResponse(
                f"the service answered HTTP {status} with an encrypted body that is not JSON",
                status=status,
            ) from exc

    # -- retries --------------------------------------------------------------------------

    def _retrying(self, *, deadline: _Deadline) -> AsyncRetrying:
        server_faults: list[int] = []  # this call's answers that get the small budget
        budgeted: list[str] = []  # this call's failures that use an attempt (not 429s)

        def should_stop(state: RetryCallState) -> bool:
            return self._should_stop(
                state, server_faults=server_faults, budgeted=budgeted, deadline=deadline
            )

        return AsyncRetrying(
            retry=retry_if_exception_type(ServiceUnavailable),
            wait=self._wait_s,
            stop=should_stop,
            before_sleep=self._before_sleep,
            reraise=True,
        )

    def _wait_s(self, state: RetryCallState) -> float:
        """Full-jitter backoff, but never shorter than the server's Retry-After."""
        error = _failure(state)
        retry_after_s = getattr(error, "retry_after_s", None)
        if isinstance(error, Throttled) and retry_after_s is not None:
            # The server said when; the limiter paces everyone from then on.
            return float(retry_after_s)
        return max(self._backoff(state), retry_after_s or 0.0)

    def _should_stop(
        self,
        state: RetryCallState,
        *,
        server_faults: list[int],
        budgeted: list[str],
        deadline: _Deadline,
    ) -> bool:
        error = _failure(state)
        status = getattr(error, "status", None)
        if status is not None and status not in _FULL_BUDGET_STATUSES:
            server_faults.append(status)
        # The small budget counts 500s only: a 429 or a timeout before one must not use it up.
        if len(server_faults) >= _SERVER_FAULT_MAX_ATTEMPTS:
            return True
        # Throttling is no fault of the chunk: while the service keeps answering, a 429
        # costs only time, and the total budget below ends it.
        if not isinstance(error, Throttled):
            budgeted.append(type(error).__name__)
        if len(budgeted) >= self._service.max_attempts:
            return True
        # Waiting to (almost) the end of the total budget leaves no time for the attempt:
        # give up now with the real error.
        return time.monotonic() + state.upcoming_sleep + _LEAST_ATTEMPT_S >= deadline.at_s

    def _before_sleep(self, state: RetryCallState) -> None:
        error = _failure(state)
        event = RetryEvent(
            attempt=state.attempt_number,
            wait_s=state.upcoming_sleep,
            error_kind=getattr(error, "kind", type(error).__name__),
            status=getattr(error, "status", None),
        )
        logger.debug(
            "transcribe retry attempt=%d kind=%s status=%s wait_s=%.3f",
            event.attempt,
            event.error_kind,
            event.status,
            event.wait_s,
        )
        if self._on_retry is not None:
            self._on_retry(event)


def _failure(state: RetryCallState) -> BaseException | None:
    return state.outcome.exception() if state.outcome is not None else None


def _refuse_if_over(size_bytes: int, *, cap: int, what: str) -> None:
    if size_bytes > cap:
        raise PayloadTooLarge(
            f"the {what} would be {size_bytes} bytes, over the upload cap of {cap} bytes "
            "(MEDASR_MAX_UPLOAD_BYTES); split the audio into smaller chunks"
        )


def _key_of(encryption: EncryptionSettings) -> jwe.JweKey | None:
    if not encryption.enabled:
        return None
    if encryption.jwe_key is None:
        raise ConfigError("encryption is on but no key is set (MEDASR_JWE_KEY)")
    return jwe.derive_key(encryption.jwe_key.get_secret_value(), kid=encryption.jwe_kid)
