"""A FHIR R4 REST client for one interaction: conditional create of a DocumentReference.

`POST [base]/DocumentReference` with `If-None-Exist: identifier=<system>|<value>`: the
server creates the resource when nothing matches (201, `Location`), answers 200 with
the one that matches, and 412 when more than one does (FHIR R4 http.html, conditional
create). A resend after an unanswered request therefore cannot make a second resource.

It is the transcription client with another request and another answer, like
docs_client.py: transport check, TLS, the exchange, the status table and the retries
(429 with Retry-After, 5xx, timeouts, dropped connections) are client.py's own. Logs
carry statuses and sizes, never the token or the document.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
from pydantic import SecretStr

from config.settings import EncryptionSettings, ServiceSettings
from service.client import RetryEvent, TranscriptionClient, _Deadline
from service.errors import CredentialsRejected, InvalidResponse, RequestRejected, ServiceUnavailable
from service.status import error_for_status

logger = logging.getLogger(__name__)

FHIR_JSON = "application/fhir+json"
RESOURCE_PATH = "/DocumentReference"
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


class FhirClient(TranscriptionClient):
    """Async conditional create of DocumentReferences; raises the service/errors.py tree.

    Construction raises ConfigError (bad URL or CA bundle, http:// to a non-loopback host).
    """

    _path = RESOURCE_PATH

    def __init__(
        self,
        service: ServiceSettings,
        *,
        base_url: str,
        token: SecretStr | None,
        http: httpx.AsyncClient | None = None,
        on_retry: Callable[[RetryEvent], None] | None = None,
    ) -> None:
        fhir = service.model_copy(update={"base_url": base_url.rstrip("/"), "token": token})
        super().__init__(fhir, EncryptionSettings(), http=http, on_retry=on_retry)

    async def create(self, body: bytes, *, if_none_exist: str) -> FhirReceipt:
        """Conditionally create one resource, retrying transient failures.

        Raises CredentialsRejected (no token, 401/403), RequestRejected (412, other 4xx,
        with the OperationOutcome's diagnostics), InvalidResponse, ServiceUnavailable.
        """
        if self._service.token is None:
            raise CredentialsRejected("no FHIR token is set; set MEDASR_FHIR_TOKEN")
        token = self._service.token.get_secret_value()
        deadline = _Deadline(time.monotonic() + self._service.retry_max_total_s)
        receipt: FhirReceipt | None = None
        async for attempt in self._retrying(deadline=deadline):
            with attempt:
                number = attempt.retry_state.attempt_number
                request = self._http.build_request(
                    "POST",
                    self._url,
                    content=body,
                    headers={
                        "Authorization": f"Bearer {token}",
                        "Content-Type": FHIR_JSON,
                        "Accept": FHIR_JSON,
                        "If-None-Exist": if_none_exist,
                    },
                )
                receipt = await self._create_once(
                    request, token=token, attempt=number, deadline=deadline
                )
        if receipt is None:  # tenacity re-raises the last error before we get here
            raise ServiceUnavailable("the create was not attempted")
        return receipt

    async def _create_once(
        self, request: httpx.Request, *, token: str, attempt: int, deadline: _Deadline
    ) -> FhirReceipt:
        body_bytes = len(request.content)
        timeout_s = min(self._service.request_timeout_s, deadline.at_s - time.monotonic())
        if timeout_s <= 0:
            raise ServiceUnavailable("no time was left in the retry budget for another attempt")
        response = await self._exchange(request, timeout_s=timeout_s)
        status = response.status_code
        logger.debug("fhir create attempt=%d status=%d bytes=%d", attempt, status, body_bytes)
        if status in (200, 201):
            resource = _json_object(response)
            resource_id = resource.get("id") if isinstance(resource.get("id"), str) else None
            location = response.headers.get("location")
            if resource_id is None and location:
                resource_id = _id_from_location(location)
            return FhirReceipt(status, resource_id, location, attempt, body_bytes)
        if status == 412:
            raise RequestRejected(
                "the FHIR server holds more than one DocumentReference with this transcript's "
                "identifier (HTTP 412); conditional create refused: remove the duplicates "
                f"there{_diagnostics(response)}",
                status=status,
            )
        outcome = _diagnostics(response)
        if 400 <= status < 500 and status not in (401, 403, 413, 429) and outcome:
            raise RequestRejected(
                f"the FHIR server refused the DocumentReference (HTTP {status}){outcome}",
                status=status,
            )
        raise error_for_status(response, sent_bytes=body_bytes, token=token)


def _json_object(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError as exc:
        raise InvalidResponse(
            f"the FHIR server accepted the DocumentReference (HTTP {response.status_code}) but "
            "its answer is not JSON; check the server by hand",
            status=response.status_code,
        ) from exc
    return body if isinstance(body, dict) else {}


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
        body = response.json()
    except ValueError:
        return ""
    if not isinstance(body, dict) or body.get("resourceType") != "OperationOutcome":
        return ""
    said = [
        str(issue.get("diagnostics") or issue.get("details", {}).get("text") or "")
        for issue in body.get("issue", [])
        if isinstance(issue, dict)
    ]
    text = "; ".join(s for s in said if s)
    return f": {text[:_DIAGNOSTICS_CHARS]}" if text else ": (an OperationOutcome with no text)"
