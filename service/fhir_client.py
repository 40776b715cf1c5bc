"""A FHIR R4 REST client for one interaction: conditional create of a DocumentReference.

`POST [base]/DocumentReference` with `If-None-Exist: identifier=<system>|<value>`: the
server creates the resource when nothing matches (201, `Location`), answers 200 with
the one that matches, and 412 when more than one does (FHIR R4 http.html, conditional
create). A resend after an unanswered request therefore cannot make a second resource.

A third thin client on service/session.py's ServiceSession, beside transcription and
documents: its own URL (the target's base), token (MEDASR_FHIR_TOKEN), body type
(application/fhir+json) and status table (412, OperationOutcome diagnostics); the
session does TLS, the byte cap, the exchange and the retries (429 with Retry-After,
5xx, timeouts, dropped connections). Logs carry statuses and sizes, never the token
or the document.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
from pydantic import SecretStr

from config.errors import MedasrError
from config.settings import ServiceSettings
from service.endpoint import Endpoint, RawBody
from service.errors import CredentialsRejected, InvalidResponse, RequestRejected
from service.retrying import RetryEvent
from service.session import AsyncClosing, ServiceSession
from service.status import error_for_status

FHIR_JSON = "application/fhir+json"
RESOURCE_PATH = "/DocumentReference"
TOKEN_SETTING = "MEDASR_FHIR_TOKEN"  # noqa: S105 (the name of a setting, not a secret)
_DIAGNOSTICS_CHARS = 300


@dataclass(frozen=True)
class FhirReceipt:
    """What the server answered to an accepted create (201) or a match (200)."""

    status: int
    resource_id: str | None
    location: str | None
    attempts: int
    request_bytes: int

    @property
    def reference(self) -> str | None:
        """`DocumentReference/<id>`, the literal reference a replacement points at."""
        return f"DocumentReference/{self.resource_id}" if self.resource_id else None


@dataclass(frozen=True)
class _Created:
    status: int
    resource_id: str | None
    location: str | None


class FhirClient(AsyncClosing):
    """Async conditional create of DocumentReferences; raises the service/errors.py tree.

    Construction raises ConfigError (bad URL or CA bundle; InsecureTransport for http://
    to a host that is not loopback without MEDASR_ALLOW_INSECURE_HTTP). With `session`,
    `aclose` leaves that session open.
    """

    def __init__(
        self,
        service: ServiceSettings,
        *,
        base_url: str,
        token: SecretStr | None,
        http: httpx.AsyncClient | None = None,
        on_retry: Callable[[RetryEvent], None] | None = None,
        session: ServiceSession | None = None,
    ) -> None:
        self._endpoint = Endpoint(
            url=base_url.rstrip("/") + RESOURCE_PATH,
            token=token,
            max_body_bytes=service.max_upload_bytes,
            label="fhir",
            translate=fhir_error_for_status,
            allow_insecure_http=service.allow_insecure_http,
            url_setting="MEDASR_DELIVERY__TARGET",
            token_setting=TOKEN_SETTING,
        )
        self._on_retry = on_retry
        self._owns_session = session is None
        self._session = session or ServiceSession.of(service, http=http)

    async def create(self, body: bytes, *, if_none_exist: str) -> FhirReceipt:
        """Conditionally create one resource, retrying transient failures.

        Raises CredentialsRejected (no token, 401/403), RequestRejected (412, another 4xx,
        with the OperationOutcome's diagnostics), PayloadTooLarge, InvalidResponse,
        ServiceUnavailable.
        """
        reply = await self._session.post(
            self._endpoint,
            RawBody(body, FHIR_JSON),
            read=_read_created,
            headers=(("Accept", FHIR_JSON), ("If-None-Exist", if_none_exist)),
            on_retry=self._on_retry,
        )
        created = reply.value
        return FhirReceipt(
            status=created.status,
            resource_id=created.resource_id,
            location=created.location,
            attempts=reply.attempts,
            request_bytes=reply.request_bytes,
        )

    async def aclose(self) -> None:
        """Close the session (and its connection pool) if this client created it."""
        if self._owns_session:
            await self._session.aclose()


def _read_created(response: httpx.Response) -> _Created:
    """201 created or 200 found: the resource's id and Location; InvalidResponse."""
    try:
        body = response.json()
    except ValueError as exc:
        raise InvalidResponse(
            f"the FHIR server accepted the DocumentReference (HTTP {response.status_code}) "
            "but its answer is not JSON; check the server by hand",
            status=response.status_code,
        ) from exc
    resource = body if isinstance(body, dict) else {}
    resource_id = resource.get("id") if isinstance(resource.get("id"), str) else None
    location = response.headers.get("location")
    if resource_id is None and location:
        resource_id = _id_from_location(location)
    return _Created(response.status_code, resource_id, location)


def fhir_error_for_status(response: httpx.Response, *, sent_bytes: int, token: str) -> MedasrError:
    """The FHIR server's non-2xx as a typed error: 412 and OperationOutcomes said plainly."""
    status = response.status_code
    outcome = _diagnostics(response)
    if status in (401, 403):
        return CredentialsRejected(
            f"the FHIR server rejected the token (HTTP {status}); check {TOKEN_SETTING}",
            status=status,
        )
    if status == 412:
        return RequestRejected(
            "the FHIR server holds more than one DocumentReference with this transcript's "
            "identifier (HTTP 412); conditional create refused: remove the duplicates "
            f"there{outcome}",
            status=status,
        )
    if 400 <= status < 500 and status not in (413, 429) and outcome:
        return RequestRejected(
            f"the FHIR server refused the DocumentReference (HTTP {status}){outcome}",
            status=status,
        )
    return error_for_status(response, sent_bytes=sent_bytes, token=token)


def _id_from_location(location: str) -> str | None:
    # [base]/DocumentReference/<id>[/_history/<vid>]
    parts = [p for p in httpx.URL(location).path.split("/") if p]
    if "DocumentReference" in parts:
        after = parts[parts.index("DocumentReference") + 1 :]
        return after[0] if after else None
    return None


def _diagnostics(response: httpx.Response) -> str:
    """`: <diagnostics>` from an OperationOutcome body, or ''."""
    try:
        body: Any = response.json()
    except ValueError:
        return ""
    if not isinstance(body, dict) or body.get("resourceType") != "OperationOutcome":
        return ""
    said = [
        str(issue.get("diagnostics") or (issue.get("details") or {}).get("text") or "")
        for issue in body.get("issue", [])
        if isinstance(issue, dict)
    ]
    text = "; ".join(s for s in said if s)
    return f": {text[:_DIAGNOSTICS_CHARS]}" if text else ": (an OperationOutcome with no text)"
