"""A client's hold on one endpoint: the endpoint, its session (shared or its own), its retries.

Every endpoint client (service/client.py, service/docs_client.py, service/fhir_client.py)
holds one `EndpointCaller` and says only what to send and how to read the answer. The
caller posts to its endpoint on the session with the client's own `on_retry` (a shared
session reports each client's retries to that client alone) and, on `aclose`, closes
the session only when it made it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import ClassVar, TypeVar

import httpx

from config.settings import EncryptionSettings, ServiceSettings
from service.endpoint import Endpoint, Payload, StatusTranslator, service_endpoint
from service.http_client import AsyncClosing, Pacing, ReadAnswer, Reply, ServiceSession
from service.retrying import RetryEvent
from service.status import error_for_status, private_error_for_status

T = TypeVar("T")

__all__ = ["EndpointCaller", "SessionClient"]


class EndpointCaller(AsyncClosing):
    """One endpoint on a session: the session given (left open) or its own (closed here).

    Construction raises ConfigError for a CA bundle that does not load.
    """

    def __init__(
        self,
        endpoint: Endpoint,
        service: ServiceSettings,
        *,
        http: httpx.AsyncClient | None = None,
        on_retry: Callable[[RetryEvent], None] | None = None,
        session: ServiceSession | None = None,
    ) -> None:
        self.endpoint = endpoint
        self._on_retry = on_retry  # this client's retries only, on a shared session too
        self._owns_session = session is None
        self._session = session or ServiceSession.of(service, http=http)

    async def post(
        self,
        payload: Payload,
        *,
        read: ReadAnswer[T],
        params: Sequence[tuple[str, str]] = (),
        headers: Sequence[tuple[str, str]] = (),
        pacing: Pacing | None = None,
    ) -> Reply[T]:
        """POST `payload` to the endpoint (see ServiceSession.post); raises its errors."""
        return await self._session.post(
            self.endpoint,
            payload,
            read=read,
            params=params,
            headers=headers,
            pacing=pacing,
            on_retry=self._on_retry,
        )

    async def aclose(self) -> None:
        """Close the session (and its connection pool) if this caller created it."""
        if self._owns_session:
            await self._session.aclose()


class SessionClient(AsyncClosing):
    """A thin client of one endpoint of the MEDASR_* service, on a session shared or its own.

    A subclass names its endpoint (`path`, `label`) and its verbs. Construction raises
    ConfigError (bad URL or CA bundle; InsecureTransport for http:// to a host that is not
    loopback without permission) or EncryptionError (an unusable JWE key); preflight.py
    checks the same settings up front. With `session`, `aclose` leaves that session open.
    """

    path: ClassVar[str]
    label: ClassVar[str]
    too_large_advice: ClassVar[str] = ""
    refused_advice: ClassVar[str] = ""  # ends the message of a 413 from the service
    resend_unanswered: ClassVar[bool] = True  # False: the receiver files every copy
    private_words: ClassVar[bool] = False  # True: its error text may name the patient

    def __init__(
        self,
        service: ServiceSettings,
        encryption: EncryptionSettings,
        *,
        http: httpx.AsyncClient | None = None,
        on_retry: Callable[[RetryEvent], None] | None = None,
        session: ServiceSession | None = None,
    ) -> None:
        endpoint = service_endpoint(
            service,
            encryption,
            path=self.path,
            label=self.label,
            too_large_advice=self.too_large_advice,
            resend_unanswered=self.resend_unanswered,
            translate=self._translator(),
        )
        self._caller = EndpointCaller(
            endpoint, service, http=http, on_retry=on_retry, session=session
        )

    def _translator(self) -> StatusTranslator:
        """How this endpoint's non-2xx answers become errors: a 413 ends with the client's
        `refused_advice`; with `private_words` the body's words are kept, never logged."""
        if self.private_words:
            return private_error_for_status
        return partial(error_for_status, refused_advice=self.refused_advice)

    async def aclose(self) -> None:
        """Close the session (and its connection pool) if this client created it."""
        await self._caller.aclose()
