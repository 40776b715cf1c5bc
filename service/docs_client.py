"""The document-upload client: POST /mr/api/v2/docs, plain multipart or JWE (service-spec.md).

It is the transcription client with another request and another answer: the transport
check, TLS, the JWE key, the exchange (timeouts, connection errors, certificate
failures), the status table (`error_for_status`) and the retries (full-jitter backoff,
Retry-After, the small 500 budget, the total time bound) are client.py's own, inherited
rather than copied. Logs carry statuses, attempts, latencies and byte counts, never the
token, the key or the document.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from service import jwe
from service.client import TranscriptionClient, _Deadline, _refuse_if_over
from service.contract import DOCS_PATH, UPLOAD_FIELD
from service.errors import CredentialsRejected, InvalidResponse, ServiceUnavailable
from service.status import error_for_status

logger = logging.getLogger(__name__)


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


class DocsClient(TranscriptionClient):
    """Async client of POST /mr/api/v2/docs; raises the service/errors.py tree only.

    Construction raises what TranscriptionClient's does (ConfigError, EncryptionError).
    Use `upload`; the inherited `transcribe` would post audio to the docs path.
    """

    _path = DOCS_PATH

    async def upload(self, document: Document) -> DocsReceipt:
        """Upload one document, retrying transient failures within retry_max_total_s.

        Raises CredentialsRejected (no token, 401/403), PayloadTooLarge (over the cap,
        413), RequestRejected, InvalidResponse, EncryptionError, ServiceUnavailable.
        """
        token = self._token()
        deadline = _Deadline(time.monotonic() + self._service.retry_max_total_s)
        receipt: DocsReceipt | None = None
        async for attempt in self._retrying(deadline=deadline):
            with attempt:
                number = attempt.retry_state.attempt_number
                receipt = await self._upload_once(
                    document, token=token, attempt=number, deadline=deadline
                )
        if receipt is None:  # tenacity re-raises the last error before we get here
            raise ServiceUnavailable("the upload was not attempted")
        return receipt

    def _token(self) -> str:
        if self._service.token is None:  # ServiceSettings turns a blank token into None
            raise CredentialsRejected("no token is set; set MEDASR_TOKEN")
        return self._service.token.get_secret_value()

    def _build_upload(self, document: Document, *, token: str) -> httpx.Request:
        headers = {"Authorization": f"Bearer {token}"}
        timeout = httpx.Timeout(self._service.request_timeout_s)
        params = httpx.QueryParams(list(document.params))
        if self._key is None:
            files = {UPLOAD_FIELD: (document.filename, document.content, document.content_type)}
            return self._http.build_request(
                "POST", self._url, params=params, headers=headers, files=files, timeout=timeout
            )
        # A fresh IV per attempt; the plaintext is {"file": "<standard base64>"} (spec rule 5).
        envelope = jwe.encrypt_request(jwe.file_upload_plaintext(document.content), key=self._key)
        content = json.dumps(envelope, separators=(",", ":")).encode("ascii")
        headers |= {"X-Encryption": "JWE", "Content-Type": "application/json"}
        return self._http.build_request(
            "POST", self._url, params=params, headers=headers, content=content, timeout=timeout
        )

    async def _upload_once(
        self, document: Document, *, token: str, attempt: int, deadline: _Deadline
    ) -> DocsReceipt:
        request = self._build_upload(document, token=token)
        body_bytes = int(request.headers.get("content-length", "0"))
        _refuse_if_over(body_bytes, cap=self._service.max_upload_bytes, what="document upload")
        timeout_s = min(self._service.request_timeout_s, deadline.at_s - time.monotonic())
        if timeout_s <= 0:
            raise ServiceUnavailable("no time was left in the retry budget for another attempt")
        started = time.perf_counter()
        response = await self._exchange(request, timeout_s=timeout_s)
        latency_ms = (time.perf_counter() - started) * 1000
        logger.debug(
            "docs attempt=%d status=%d latency_ms=%.1f request_bytes=%d response_bytes=%d",
            attempt,
            response.status_code,
            latency_ms,
            body_bytes,
            len(response.content),
        )
        if not response.is_success:
            raise error_for_status(response, sent_bytes=body_bytes, token=token)
        return DocsReceipt(
            fields=self._answer_fields(response),
            attempts=attempt,
            latency_ms=latency_ms,
            request_bytes=body_bytes,
        )

    def _answer_fields(self, response: httpx.Response) -> dict[str, Any]:
        """The answer's JSON object (decrypted if it is an envelope); InvalidResponse."""
        status = response.status_code
        try:
            body = response.json()
        except ValueError as exc:
            raise InvalidResponse(
                f"the service accepted the document (HTTP {status}) but its answer is not "
                f"JSON ({len(response.content)} bytes); check the patient record by hand",
                status=status,
            ) from exc
        if jwe.is_encrypted_envelope(body):
            body = self._decrypt(body, status=status)
        if not isinstance(body, dict):
            raise InvalidResponse(
                f"the service accepted the document (HTTP {status}) but its answer is not "
                "a JSON object; check the patient record by hand",
                status=status,
            )
        return body
