"""A FHIR R4 REST client for one interaction: conditional create of a DocumentReference.

`POST [base]/DocumentReference` with `If-None-Exist: identifier=<system>|<value>`: the
server creates the resource when nothing matches (201, `Location`), answers 200 with
the one that matches, and 412 when more than one does (FHIR R4 http.html, conditional
create). A resend after an unanswered request therefore cannot make a second resource.

A third thin client on service/http_client.py's ServiceSession, beside transcription and
documents, holding its endpoint and session as they do (service/session_client.py's
EndpointCaller): its own URL (the target's base), token (MEDASR_FHIR_TOKEN), body type
(application/fhir+json) and status table (412, OperationOutcome diagnostics); the
session does TLS, the byte cap, the exchange and the retries (429 with Retry-After,
5xx, timeouts, dropped connections). Logs carry statuses and sizes, never the token
or the document.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import httpx
from pydantic import SecretStr

from config.errors import MedasrError
from config.settings import ServiceSettings
from service.answers import json_or_none
from service.endpoint import Endpoint, RawBody
from service.errors import CredentialsRejected, RequestRejected
from service.http_client import AsyncClosing, ServiceSession
from service.retrying import RetryEvent
from service.session_client import EndpointCaller
from service.status import error_for_status

FHIR_JSON = "application/fhir+json"
RESOURCE_PATH = "/DocumentReference"
TOKEN_SETTING = "MEDASR_FHIR_TOKEN"  # noqa: S105 (the name of a setting, not a secret)
_DIAGNOSTICS_CHARS = 300
_RESOURCE_TYPE = "DocumentReference"
_FHIR_ID = re.compile(r"[A-Za-z0-9\-.]{1,64}")  # R4 datatypes: id


@dataclass(frozen=True)
class FhirReceipt:
    """What the server answered to an accepted create (201) or a match (200)."""

    status: int
    resource_id: str | None
    location: str | None
    attempts: int
    request_bytes: int
    unconfirmed: str | None = None  # why no id of a DocumentReference could be taken

    @property
    def reference(self) -> str | None:
        """`DocumentReference/<id>`, the literal reference a replacement points at."""
        return f"DocumentReference/{self.resource_id}" if self.resource_id else None


@dataclass(frozen=True)
class _Created:
    status: int
    resource_id: str | None
    location: str | None
    unconfirmed: str | None


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
        endpoint = Endpoint(
            url=base_url.rstrip("/") + RESOURCE_PATH,
            token=token,
            max_body_bytes=service.max_upload_bytes,
            label="fhir",
            translate=fhir_error_for_status,
            allow_insecure_http=service.allow_insecure_http,
            url_setting="MEDASR_DELIVERY__TARGET",
            token_setting=TOKEN_SETTING,
        )
        self._caller = EndpointCaller(
            endpoint, service, http=http, on_retry=on_retry, session=session
        )

    async def create(self, body: bytes, *, if_none_exist: str) -> FhirReceipt:
        """Conditionally create one resource, retrying transient failures.

        Raises CredentialsRejected (no token, 401/403), RequestRejected (412, another 4xx,
        with the OperationOutcome's diagnostics), PayloadTooLarge, InvalidResponse,
        ServiceUnavailable.
        """
        reply = await self._caller.post(
            RawBody(body, FHIR_JSON),
            read=partial(_read_created, sent=_resource_of(body)),
            headers=(("Accept", FHIR_JSON), ("If-None-Exist", if_none_exist)),
        )
        created = reply.value
        return FhirReceipt(
            status=created.status,
            resource_id=created.resource_id,
            location=created.location,
            attempts=reply.attempts,
            request_bytes=reply.request_bytes,
            unconfirmed=created.unconfirmed,
        )

    async def aclose(self) -> None:
        """Close the session (and its connection pool) if this client created it."""
        await self._caller.aclose()


def _resource_of(body: bytes) -> dict[str, Any] | None:
    """The resource we send, to compare the answer's with (None if it is not JSON)."""
    try:
        resource = json.loads(body)
    except ValueError:
        return None
    return resource if isinstance(resource, dict) else None


def _read_created(response: httpx.Response, *, sent: dict[str, Any] | None) -> _Created:
    """201 created or 200 found: the resource's id as the answer proves it, else why not."""
    resource_id, problem = created_id(response, sent=sent)
    location = response.headers.get("location")
    return _Created(response.status_code, resource_id, location, problem)


def created_id(
    response: httpx.Response, *, sent: dict[str, Any] | None = None
) -> tuple[str | None, str | None]:
    """(id, None) when the answer names one DocumentReference under the request's base,
    and, given the resource `sent`, one with its masterIdentifier and subject; (None, why)
    otherwise."""
    body = json_or_none(response)
    other = _another_document(body, sent) if sent else None
    if other:
        return None, other
    from_body, body_type = _body_id(body)
    location = response.headers.get("location")
    from_location, location_problem = (None, None)
    if location:
        from_location, location_problem = _location_id(location, request=response.request)
    if location_problem:  # a Location elsewhere contradicts any body
        return None, location_problem
    if from_body and from_location and from_body != from_location:
        return None, "its body and its Location disagree about the DocumentReference's id"
    if from_body or from_location:
        return from_body or from_location, None
    if body_type:
        return None, f"its body is an {body_type}, not the DocumentReference, and no Location"
    return None, "it names no DocumentReference (no resource body, no Location)"


def _another_document(body: Any, sent: dict[str, Any]) -> str | None:
    """Why a DocumentReference body is not the one sent (another identifier or patient)."""
    if not isinstance(body, dict) or body.get("resourceType") != _RESOURCE_TYPE:
        return None
    for key in ("masterIdentifier", "subject"):
        theirs, ours = _identifier_of(body, key), _identifier_of(sent, key)
        if theirs and ours and theirs != ours:
            return f"its DocumentReference is another document (another {key})"
    return None


def _identifier_of(resource: dict[str, Any], key: str) -> tuple[str, str] | None:
    """(system, value) of `masterIdentifier`, or of `subject`'s logical identifier."""
    found = resource.get(key)
    if key == "subject" and isinstance(found, dict):
        found = found.get("identifier")
    if not isinstance(found, dict) or not found.get("value"):
        return None
    return str(found.get("system") or ""), str(found["value"])


def _body_id(body: Any) -> tuple[str | None, str | None]:
    """(id of a DocumentReference body, None) or (None, the body's resourceType)."""
    if not isinstance(body, dict):
        return None, None
    kind = body.get("resourceType")
    if kind != _RESOURCE_TYPE:
        return None, str(kind)[:40] if isinstance(kind, str) else None
    resource_id = body.get("id")
    if isinstance(resource_id, str) and _FHIR_ID.fullmatch(resource_id):
        return resource_id, None
    return None, None


def _location_id(location: str, *, request: httpx.Request) -> tuple[str | None, str | None]:
    """The id in `[base]/DocumentReference/<id>[/_history/<vid>]`, the request's own base."""
    created_at = request.url  # [base]/DocumentReference
    try:
        found = created_at.join(location)
    except httpx.InvalidURL:
        return None, "its Location is not a URL"
    if (found.scheme, found.host, found.port) != (
        created_at.scheme,
        created_at.host,
        created_at.port,
    ):
        return None, f"its Location points at another server ({found.host[:60]})"
    prefix = created_at.path.rstrip("/") + "/"
    parts = found.path[len(prefix) :].split("/") if found.path.startswith(prefix) else []
    if len(parts) in (1, 3) and _FHIR_ID.fullmatch(parts[0]) and parts[1:2] in ([], ["_history"]):
        return parts[0], None
    return None, "its Location is not a DocumentReference under the target's base"


def fhir_error_for_status(response: httpx.Response, *, sent_bytes: int, token: str) -> MedasrError:
    """The FHIR server's non-2xx as a typed error: 412 and OperationOutcomes said plainly.

    The OperationOutcome's own words (they often quote the subject) are the error's
    `detail`, capped and on one line: stored with the failure, never in a log line.
    """
    status = response.status_code
    outcome = _diagnostics(response)
    error: MedasrError
    if status in (401, 403):
        return CredentialsRejected(
            f"the FHIR server rejected the token (HTTP {status}); check {TOKEN_SETTING}",
            status=status,
        )
    if status == 412:
        error = RequestRejected(
            "the FHIR server holds more than one DocumentReference with this transcript's "
            "identifier (HTTP 412); conditional create refused: remove the duplicates there",
            status=status,
        )
    elif 400 <= status < 500 and status not in (413, 429) and outcome:
        error = RequestRejected(
            f"the FHIR server refused the DocumentReference (HTTP {status})", status=status
        )
    else:
        error = error_for_status(
            response,
            sent_bytes=sent_bytes,
            token=token,
            who="the FHIR server",
            url_setting="--to / MEDASR_DELIVERY__TARGET",
            quote=False,  # the words are the detail, kept with the row only
        )
    error.detail = outcome
    return error


def _diagnostics(response: httpx.Response) -> str:
    """The diagnostics of an OperationOutcome body (or a gateway's JSON `message`) on one
    line (capped), or ''."""
    body = json_or_none(response)
    if isinstance(body, dict) and isinstance(body.get("message"), str):  # a gateway's answer
        return " ".join(body["message"].split())[:_DIAGNOSTICS_CHARS]
    if not isinstance(body, dict) or body.get("resourceType") != "OperationOutcome":
        return ""
    said = [
        str(issue.get("diagnostics") or (issue.get("details") or {}).get("text") or "")
        for issue in body.get("issue", [])
        if isinstance(issue, dict)
    ]
    text = " ".join("; ".join(s for s in said if s).split())  # one line
    return text[:_DIAGNOSTICS_CHARS] if text else "(an OperationOutcome with no text)"
