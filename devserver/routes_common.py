"""What every devserver route shares: the door, faults, reading uploads, answers, the ledger.

A route module (asr_route.py, docs_route.py, ...) builds on these and on nothing of another
route; it lists its routes in `ROUTES` and is registered once in asgi.py.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from devserver.ledger import LedgerEntry
from devserver.responses import (
    DroppedResponse,
    EndlessResponse,
    SlowResponse,
    retry_after_value,
    tamper_envelope,
)
from devserver.state import DevServerState
from devserver.tokens import TokenCheck
from devserver.uploads import Refusal, audio_from_envelope, audio_from_multipart
from service import jwe
from service.contract import (
    MESSAGE_FORBIDDEN,
    MESSAGE_NO_FILE,
    MESSAGE_TOO_LARGE,
    MESSAGE_UNAUTHORIZED,
    TRANSCRIBE_PATH,
)

logger = logging.getLogger(__name__)

# Statuses a fault answers with a `{"message": ...}` body.
_FAULT_STATUSES = {
    "500": (500, MESSAGE_NO_FILE),
    "502": (502, "Bad Gateway"),
    "503": (503, "Service Unavailable"),
    "504": (504, "Gateway Timeout"),
}
# What a misconfigured proxy might send with a 200: an HTML page cut short, not JSON.
_BAD_JSON_BODY = b"<html><body><p>Request accepted</p>"


@dataclass
class Trace:
    """The ledger fields of one request, filled in as it is handled (all but the status)."""

    time: float
    language: str | None
    path: str = TRANSCRIBE_PATH
    query: str | None = None  # kept for document uploads (patient and type ids)
    sha256: str | None = None
    bytes: int = 0  # of the uploaded file
    body_bytes: int = 0
    encrypted: bool = False
    filename: str | None = None
    retry_after_s: float | None = None
    fault: str | None = None
    txn_id: str | None = None
    text_fault: str | None = None
    in_flight: int | None = None

    def entry(self, *, status: int) -> LedgerEntry:
        """The ledger line of this request, answered with `status` (0 = dropped)."""
        return LedgerEntry(status=status, **dataclasses.asdict(self))


Answer = Callable[[Request, DevServerState, Trace], Awaitable[Response]]


async def answer_and_record(request: Request, answer: Answer, *, trace: Trace) -> Response:
    """`answer`'s response, a Refusal as its message; one ledger line per request, always."""
    state: DevServerState = request.app.state.devserver
    try:
        response = await answer(request, state, trace)
    except Refusal as refusal:
        response = message(refusal.status, refusal.message)
    except Exception as exc:  # a devserver bug: still one ledger line and a contract-shaped 500
        logger.error(
            "devserver: unexpected %s handling a request to %s",
            type(exc).__name__,
            trace.path,
            exc_info=exc,
        )
        response = message(500, MESSAGE_NO_FILE)
    status = 0 if isinstance(response, DroppedResponse) else response.status_code
    state.ledger.record(trace.entry(status=status))
    return response


def message(status: int, text: str, *, headers: dict[str, str] | None = None) -> Response:
    """A `{"message": text}` answer, the shape of every error in the spec."""
    return JSONResponse({"message": text}, status_code=status, headers=headers)


async def check_in(request: Request, state: DevServerState, trace: Trace) -> str:
    """Latency, the token, the declared size; then the fault drawn for this request.

    Raises Refusal (401, 403, 413).
    """
    config = state.config
    if config.latency_ms > 0:
        await asyncio.sleep(config.latency_ms / 1000)
    _authenticate(request, state)
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > config.max_bytes:
        raise Refusal(413, MESSAGE_TOO_LARGE)
    fault = state.faults.draw()
    trace.fault = None if fault == "ok" else fault
    return fault


def _authenticate(request: Request, state: DevServerState) -> None:
    check = state.tokens.check(request.headers.get("authorization"))
    if check is TokenCheck.MISSING:
        raise Refusal(401, MESSAGE_UNAUTHORIZED)
    if check is TokenCheck.FORBIDDEN or not state.faults.admit_authenticated():
        raise Refusal(403, MESSAGE_FORBIDDEN)


async def read_upload(request: Request, *, state: DevServerState, trace: Trace) -> bytes:
    """The uploaded file (multipart or JWE); raises Refusal for a bad or missing file."""
    body = await _read_body(request, max_bytes=state.config.max_bytes)
    trace.body_bytes = len(body)
    if request.headers.get("x-encryption", "").strip().upper() == "JWE":
        trace.encrypted = True
        return audio_from_envelope(body, key=state.key)
    upload, trace.filename = await audio_from_multipart(request.headers, body)
    return upload


async def identify_upload(request: Request, *, state: DevServerState, trace: Trace) -> None:
    """Hash the file of a request about to get an injected fault (best effort).

    The ledger then ties every attempt of a file together, so a test can check, e.g.,
    that the retry after a 429 waited for its Retry-After. A bad body is ignored here.
    """
    try:
        upload = await read_upload(request, state=state, trace=trace)
    except Refusal:
        return
    note_upload(upload, trace=trace)


def note_upload(upload: bytes, *, trace: Trace) -> None:
    """Put the file's sha256 and size in the trace."""
    trace.sha256 = hashlib.sha256(upload).hexdigest()
    trace.bytes = len(upload)


async def _read_body(request: Request, *, max_bytes: int) -> bytes:
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > max_bytes:
            raise Refusal(413, MESSAGE_TOO_LARGE)
    return bytes(body)


def fault_response(fault: str, *, state: DevServerState, trace: Trace) -> Response:
    """The answer an injected fault gives (429, 5xx, bad JSON, no text, a dropped socket)."""
    config = state.config
    if fault == "429":
        trace.retry_after_s = float(config.retry_after_s)
        value = retry_after_value(config.retry_after_s, http_date=config.retry_after_http_date)
        return message(429, "Too Many Requests", headers={"Retry-After": value})
    if fault in _FAULT_STATUSES:
        status, text = _FAULT_STATUSES[fault]
        return message(status, text)
    if fault == "badjson":
        return Response(_BAD_JSON_BODY, media_type="application/json")
    if fault == "endless":
        return EndlessResponse()
    if fault == "notext":  # everything a success carries except the text
        trace.txn_id = next_txn_id(state, trace)
        payload = {"txn_id": trace.txn_id, "audio_duration": 0.0}
        return Response(
            encode_payload(payload, state=state, encrypted=trace.encrypted),
            media_type="application/json",
        )
    return DroppedResponse()


def success_response(
    payload: dict[str, Any], *, state: DevServerState, trace: Trace, fault: str
) -> Response:
    """A 200 with `payload` (sealed if the request was), its body dribbled under "slow"."""
    content = encode_payload(payload, state=state, encrypted=trace.encrypted)
    if fault == "slow":
        return SlowResponse(content, slow_s=state.config.slow_s)
    return Response(content, media_type="application/json")


def next_txn_id(state: DevServerState, trace: Trace) -> str:
    """A fresh transaction id: a counter and the start of the file's hash."""
    return f"dev-{next(state.txn_numbers):06d}-{(trace.sha256 or 'no-audio')[:8]}"


def encode_payload(payload: dict[str, Any], *, state: DevServerState, encrypted: bool) -> bytes:
    """The JSON body of an answer, as a JWE envelope when the request came sealed."""
    plain = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    if not encrypted or state.key is None:
        return plain
    legacy = state.config.legacy_response_tag
    envelope = jwe.encrypt_response(plain, key=state.key, legacy_tag=legacy)
    if state.config.tamper_responses:
        envelope = tamper_envelope(envelope)
    return json.dumps(envelope, separators=(",", ":")).encode("ascii")
