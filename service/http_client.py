"""medasr's HTTP client: one pool of connections to the services, where every request is made.

httpx's model: one `ServiceSession` over one connection pool (TLS verification, a
custom CA), and thin endpoint clients (service/client.py, service/docs_client.py,
service/fhir_client.py, each holding its endpoint through service/session_client.py)
that say what to send and how to read the answer. For every request the session checks the
byte cap, adds the bearer token, seals the body as JWE when the endpoint has a key,
bounds each attempt by what is left of the call's time budget, reads each answer up to
a cap (MEDASR_SERVICE__MAX_ANSWER_BYTES: a server that streams without end costs that
much memory, no more), translates httpx
failures and non-2xx statuses into the service/errors.py tree once (the endpoint's
`translate`), and retries the transient ones (service/retrying.py). Logs carry
statuses, attempts, latencies and byte counts: never the token, the key or any content.
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, Self, TypeVar

import httpx
from tenacity import AsyncRetrying

from config.settings import ServiceSettings
from service import jwe
from service.contract import UPLOAD_FIELD
from service.endpoint import Endpoint, FilePart, Payload
from service.errors import AnswerTooLarge, PayloadTooLarge, ServiceUnavailable
from service.retrying import (
    NEVER_SENT,
    SYSTEM_CLOCK,
    Clock,
    Deadline,
    RetryEvent,
    RetryPolicy,
    retrying,
)
from service.status import bearer_token, certificate_failure, origin_of, tls_verify

logger = logging.getLogger(__name__)

T = TypeVar("T")

ReadAnswer = Callable[[httpx.Response], T]  # a 2xx answer -> the endpoint's value

# An idle pooled connection is dropped after this many seconds: under the 5 s after which
# uvicorn (the devserver) and many servers close one. At httpx's own default (also 5 s)
# a request can go out on a connection the server is closing at that moment: it never
# reaches the service, fails, and is sent again (a retry the service never saw).
KEEPALIVE_EXPIRY_S = 2.0
ANSWER_CAP_SETTING = "MEDASR_SERVICE__MAX_ANSWER_BYTES"
DEFAULT_MAX_ANSWER_BYTES = 10_000_000
_URLS_KEPT = 64  # parsed URLs a session keeps (endpoint and query string)
# Rebuilt answers carry their body decoded and whole: these headers would describe another.
_BODY_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})


@dataclass(frozen=True)
class Reply(Generic[T]):
    """What an endpoint read from the accepted answer, and what the call cost."""

    value: T
    attempts: int  # HTTP attempts this call took (1 = no retry)
    latency_ms: float  # wall time of the successful attempt
    request_bytes: int  # body bytes of the successful attempt


@dataclass(frozen=True)
class Pacing:
    """Our own limits around every attempt; waiting in them costs none of the time budget.

    `around` is entered around each attempt (a concurrency limiter that sees how it
    ended); `before` is awaited inside it before the request (a rate limiter). Either
    may raise to stop the call.
    """

    before: Callable[[], Awaitable[None]] | None = None
    around: Callable[[], AbstractAsyncContextManager[None]] | None = None


@dataclass(frozen=True)
class _Call(Generic[T]):
    """One call: the same for every attempt, except the JWE IV, which is fresh each time."""

    endpoint: Endpoint
    token: str = field(repr=False)
    payload: Payload
    params: tuple[tuple[str, str], ...]
    headers: tuple[tuple[str, str], ...]
    read: ReadAnswer[T]


class AsyncClosing:
    """`async with` for anything that has `aclose()`: it is closed on the way out."""

    async def aclose(self) -> None:
        """Release what this object holds."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class ServiceSession(AsyncClosing):
    """One connection pool and retry policy shared by every endpoint client on it.

    Construction raises ConfigError for a CA bundle that does not load.
    """

    def __init__(
        self,
        policy: RetryPolicy,
        *,
        ca_bundle: Path | None = None,
        http: httpx.AsyncClient | None = None,
        max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.policy = policy
        self.max_answer_bytes = max_answer_bytes
        self.clock = clock
        self._owns_http = http is None
        # One multipart boundary for the session's uploads (random, never in a body we
        # send): httpx draws one per request from the OS, a system call per upload.
        self._boundary = secrets.token_hex(16)
        self._urls: dict[tuple[str, tuple[tuple[str, str], ...]], httpx.URL] = {}
        self._http = http or httpx.AsyncClient(
            verify=tls_verify(ca_bundle),
            timeout=httpx.Timeout(policy.request_timeout_s),
            follow_redirects=False,
            limits=httpx.Limits(keepalive_expiry=KEEPALIVE_EXPIRY_S),
        )

    @classmethod
    def of(
        cls, service: ServiceSettings, *, http: httpx.AsyncClient | None = None
    ) -> ServiceSession:
        """The session the MEDASR_* service settings describe; raises ConfigError."""
        return cls(
            RetryPolicy.of(service),
            ca_bundle=service.ca_bundle,
            http=http,
            max_answer_bytes=service.max_answer_bytes,
        )

    async def post(
        self,
        endpoint: Endpoint,
        payload: Payload,
        *,
        read: ReadAnswer[T],
        params: Sequence[tuple[str, str]] = (),
        headers: Sequence[tuple[str, str]] = (),
        pacing: Pacing | None = None,
        on_retry: Callable[[RetryEvent], None] | None = None,
    ) -> Reply[T]:
        """POST `payload` to `endpoint`, retrying transient failures within the policy.

        `read` turns a 2xx answer into the endpoint's value (raising InvalidResponse for
        one it cannot use); `on_retry` hears of every retry before its wait. Raises the
        service/errors.py tree: CredentialsRejected (no token), ConfigError (a token that
        cannot be a header), PayloadTooLarge (over the cap, before sending), what
        `endpoint.translate` makes of a status, and the last ServiceUnavailable once a
        budget is spent.
        """
        token = bearer_token(endpoint.token, setting=endpoint.token_setting)
        _refuse_oversized(endpoint, payload)
        call = _Call(endpoint, token, payload, tuple(params), tuple(headers), read)
        # One clock for the whole call: attempts and backoff waits come out of this budget;
        # waiting in our own limits (pacing) does not.
        deadline = Deadline.after(self.policy.total_s, clock=self.clock)
        reply: Reply[T] | None = None
        async for attempt in self._attempts(endpoint, deadline=deadline, on_retry=on_retry):
            with attempt:
                number = attempt.retry_state.attempt_number
                reply = await self._paced_attempt(
                    call, attempt=number, deadline=deadline, pacing=pacing
                )
        if reply is None:  # tenacity re-raises the last error before we get here
            raise ServiceUnavailable("the request was not attempted")
        return reply

    def _attempts(
        self,
        endpoint: Endpoint,
        *,
        deadline: Deadline,
        on_retry: Callable[[RetryEvent], None] | None,
    ) -> AsyncRetrying:
        """The policy's attempts for one call, within its deadline."""
        return retrying(
            self.policy,
            deadline=deadline,
            label=endpoint.label,
            on_retry=on_retry,
            resend_unanswered=endpoint.resend_unanswered,
        )

    async def aclose(self) -> None:
        """Close the connection pool if this session created it."""
        if self._owns_http:
            await self._http.aclose()

    # -- one attempt ----------------------------------------------------------------------

    async def _paced_attempt(
        self, call: _Call[T], *, attempt: int, deadline: Deadline, pacing: Pacing | None
    ) -> Reply[T]:
        if pacing is None:
            return await self._attempt(call, attempt=attempt, deadline=deadline)
        waited_from_s = self.clock.monotonic_s()
        async with pacing.around() if pacing.around else nullcontext():
            if pacing.before is not None:
                await pacing.before()
            deadline.at_s += self.clock.monotonic_s() - waited_from_s
            return await self._attempt(call, attempt=attempt, deadline=deadline)

    async def _attempt(self, call: _Call[T], *, attempt: int, deadline: Deadline) -> Reply[T]:
        endpoint = call.endpoint
        request = self._build_request(call)
        body_bytes = int(request.headers.get("content-length", "0"))
        _refuse_if_over(body_bytes, endpoint=endpoint, what="request body")
        # A late attempt gets only what is left of the call's budget, so the total stays bounded.
        timeout_s = min(self.policy.request_timeout_s, deadline.left_s())
        if timeout_s <= 0:
            raise ServiceUnavailable("no time was left in the retry budget for another attempt")
        started = time.perf_counter()
        response = await self._exchange(request, timeout_s=timeout_s)
        latency_ms = (time.perf_counter() - started) * 1000
        logger.debug(
            "%s attempt=%d status=%d latency_ms=%.1f request_bytes=%d response_bytes=%d",
            endpoint.label,
            attempt,
            response.status_code,
            latency_ms,
            body_bytes,
            len(response.content),
        )
        if not response.is_success:
            raise endpoint.translate(response, sent_bytes=body_bytes, token=call.token)
        value = call.read(response)
        return Reply(value=value, attempts=attempt, latency_ms=latency_ms, request_bytes=body_bytes)

    def _build_request(self, call: _Call[T]) -> httpx.Request:
        endpoint, payload = call.endpoint, call.payload
        headers = dict(call.headers) | {"Authorization": f"Bearer {call.token}"}
        build = _RequestBuilder(self._http, self._url(endpoint.url, call.params), self.policy)
        if endpoint.key is not None:
            # A fresh IV per attempt; a file's plaintext is {"file": "<base64>"} (spec rule 5).
            plain = payload.content
            if isinstance(payload, FilePart):
                plain = jwe.file_upload_plaintext(payload.content)
            envelope = jwe.encrypt_request(plain, key=endpoint.key)
            content = json.dumps(envelope, separators=(",", ":")).encode("ascii")
            headers |= {"X-Encryption": "JWE", "Content-Type": "application/json"}
            return build(headers, content=content)
        if isinstance(payload, FilePart):
            files = {UPLOAD_FIELD: (payload.filename, payload.content, payload.content_type)}
            multipart = f"multipart/form-data; boundary={self._boundary}"
            request = build(headers | {"Content-Type": multipart}, files=files)
            request.read()  # the body as one piece: one write, not one per multipart part
            return request
        return build(headers | {"Content-Type": payload.content_type}, content=payload.content)

    def _url(self, url: str, params: tuple[tuple[str, str], ...]) -> httpx.URL:
        """`url` with `params`, parsed once per pair (httpx parses a str URL per request)."""
        parsed = self._urls.get((url, params))
        if parsed is None:
            if len(self._urls) >= _URLS_KEPT:  # query strings that vary (a delivery's ids)
                self._urls.clear()
            parsed = self._urls[url, params] = httpx.URL(
                url, params=httpx.QueryParams(list(params))
            )
        return parsed

    async def _exchange(self, request: httpx.Request, *, timeout_s: float) -> httpx.Response:
        """The answer to one request; raises ServiceUnavailable or TlsNotVerified (terminal)."""
        try:
            # httpx timeouts are per read/write; this bounds the whole exchange.
            async with self.clock.timeout(timeout_s):
                response = await self._http.send(request, stream=True)
                try:
                    return await read_capped(response, cap_bytes=self.max_answer_bytes)
                finally:
                    await response.aclose()
        except (TimeoutError, httpx.TimeoutException) as exc:
            shown_s = round(timeout_s, 2)
            raise ServiceUnavailable(f"the service did not answer within {shown_s:g} s") from exc
        except httpx.HTTPError as exc:
            tls_failure = certificate_failure(exc)
            if tls_failure is not None:  # the same certificate fails the same way: no retry
                raise tls_failure from exc
            raise ServiceUnavailable(_unanswered(request.url, exc)) from exc


def _unanswered(url: httpx.URL, exc: httpx.HTTPError) -> str:
    """Why a request got no answer: unreached, or lost once it may have arrived (then the
    service may have acted on it, and billed it: "could not reach" would say it did not)."""
    where, name = origin_of(url), type(exc).__name__
    if isinstance(exc, NEVER_SENT):
        return f"could not reach the service at {where} ({name})"
    return (
        f"the connection to the service at {where} broke before its answer ({name}); "
        "the service may have received the request"
    )


async def read_capped(response: httpx.Response, *, cap_bytes: int) -> httpx.Response:
    """`response` with its body read (decoded) up to `cap_bytes`; raises AnswerTooLarge for
    a 2xx past it. A longer error answer keeps its first `cap_bytes`: its status says enough."""
    status = response.status_code
    declared = response.headers.get("content-length", "")
    if response.is_success and declared.isdigit() and int(declared) > cap_bytes:
        raise AnswerTooLarge(_too_large_message(status, cap_bytes), status=status)
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        if size + len(chunk) > cap_bytes:
            if response.is_success:
                raise AnswerTooLarge(_too_large_message(status, cap_bytes), status=status)
            chunks.append(chunk[: cap_bytes - size])
            break
        chunks.append(chunk)
        size += len(chunk)
    headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in _BODY_HEADERS]
    return httpx.Response(
        status, headers=headers, content=b"".join(chunks), request=response.request
    )


def _too_large_message(status: int, cap_bytes: int) -> str:
    return (
        f"the answer (HTTP {status}) runs past {cap_bytes} bytes ({ANSWER_CAP_SETTING}); "
        "medasr stopped reading it"
    )


@dataclass(frozen=True)
class _RequestBuilder:
    """httpx.AsyncClient.build_request with what every attempt shares filled in."""

    http: httpx.AsyncClient
    url: httpx.URL  # its query included
    policy: RetryPolicy

    def __call__(
        self,
        headers: dict[str, str],
        *,
        content: bytes | None = None,
        files: dict[str, tuple[str, bytes, str]] | None = None,
    ) -> httpx.Request:
        return self.http.build_request(
            "POST",
            self.url,
            headers=headers,
            content=content,
            files=files,
            timeout=httpx.Timeout(self.policy.request_timeout_s),
        )


def _refuse_oversized(endpoint: Endpoint, payload: Payload) -> None:
    """Refuse a file whose body cannot fit the cap before building anything."""
    if not isinstance(payload, FilePart):
        return  # a raw body's size is checked exactly once it is built
    size_bytes = len(payload.content)
    if endpoint.key is not None:
        body_bytes = jwe.encrypted_upload_body_bytes(size_bytes, kid=endpoint.key.kid)
        _refuse_if_over(body_bytes, endpoint=endpoint, what="encrypted request body")
    else:
        _refuse_if_over(size_bytes, endpoint=endpoint, what=payload.noun)


def _refuse_if_over(size_bytes: int, *, endpoint: Endpoint, what: str) -> None:
    cap = endpoint.max_body_bytes
    if size_bytes > cap:
        raise PayloadTooLarge(
            f"the {what} would be {size_bytes} bytes, over the upload cap of {cap} bytes "
            f"({endpoint.cap_setting}){endpoint.too_large_advice}"
        )
