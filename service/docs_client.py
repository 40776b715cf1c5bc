"""The document-upload client: POST /mr/api/v2/docs, plain multipart or JWE (service-spec.md).

A thin client on `ServiceSession` (service/http_client.py), which owns the transport, TLS,
JWE, the byte cap, retries (Retry-After, the small 500 budget, the total time bound)
and the status table. What is this endpoint's own: a document as the multipart `file`
with its query parameters, and an answer whose fields are kept as they came.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx

from service.answers import json_object_of
from service.contract import DOCS_PATH
from service.endpoint import FilePart
from service.session_client import SessionClient


@dataclass(frozen=True)
class Document:
    """One file to upload: bytes, name, media type and the query parameters to send."""

    content: bytes = field(repr=False)  # a transcript: never in a repr or a log line
    filename: str
    content_type: str
    params: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class DocsReceipt:
    """What the service answered to an accepted upload, every field kept as it came."""

    fields: dict[str, Any]
    attempts: int
    latency_ms: float
    request_bytes: int


class DocsClient(SessionClient):
    """Async client of POST /mr/api/v2/docs; raises the service/errors.py tree only.

    Constructed as every SessionClient: (service, encryption, *, http, on_retry, session).
    """

    path = DOCS_PATH
    label = "docs"
    # Every upload is filed: one that may have arrived is in doubt, never sent again here.
    resend_unanswered = False
    # Its refusals may name the patient the query links: stored with the row, never logged.
    private_words = True

    async def upload(self, document: Document) -> DocsReceipt:
        """Upload one document, retrying transient failures within retry_max_total_s.

        Raises CredentialsRejected (no token, 401/403), ConfigError (a token that cannot
        be a header), PayloadTooLarge (over the cap, 413), RequestRejected,
        InvalidResponse, EncryptionError, ServiceUnavailable.
        """
        part = FilePart(document.content, document.filename, document.content_type)
        reply = await self._caller.post(part, read=self._read_fields, params=document.params)
        return DocsReceipt(
            fields=reply.value,
            attempts=reply.attempts,
            latency_ms=reply.latency_ms,
            request_bytes=reply.request_bytes,
        )

    def _read_fields(self, response: httpx.Response) -> dict[str, Any]:
        # The document may be filed already: every failure here asks for a look by hand.
        return json_object_of(
            response,
            key=self._caller.endpoint.key,
            answered="the service accepted the document",
            advice="; check the patient record by hand",
        )
