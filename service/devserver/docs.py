"""The devserver's document upload, POST /mr/api/v2/docs: plain multipart or JWE.

Same door as transcription: the same token check, the same size cap, the same fault
draws (429 with Retry-After, 5xx, resets, slow and bad bodies) and the same ledger,
whose lines here carry the document's sha256 and size and the path. An accepted
document gets `{"document_id": "<uuid>"}`, encrypted when the request was.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import logging
import time
import uuid

from starlette.requests import Request
from starlette.responses import Response

from service.contract import DOCS_PATH, MESSAGE_NO_FILE, MESSAGE_TOO_LARGE
from service.devserver.app import (
    DevServerState,
    _authenticate,
    _encode_payload,
    _fault_response,
    _message,
    _read_audio,
    _Trace,
)
from service.devserver.responses import DroppedResponse, SlowResponse
from service.devserver.uploads import Refusal

logger = logging.getLogger(__name__)


async def docs_endpoint(request: Request) -> Response:
    """Accept one document (or play the drawn fault); one ledger line per request."""
    state: DevServerState = request.app.state.devserver
    trace = _Trace(time=time.time(), language=None)
    try:
        response = await _answer(request, state, trace)
    except Refusal as refusal:
        response = _message(refusal.status, refusal.message)
    except Exception as exc:  # a devserver bug: still one ledger line and a contract-shaped 500
        logger.error(
            "devserver: unexpected %s handling an upload", type(exc).__name__, exc_info=exc
        )
        response = _message(500, MESSAGE_NO_FILE)
    status = 0 if isinstance(response, DroppedResponse) else response.status_code
    entry = trace.entry(status=status)
    query = request.url.query or None
    state.ledger.record(dataclasses.replace(entry, path=DOCS_PATH, query=query))
    return response


async def _answer(request: Request, state: DevServerState, trace: _Trace) -> Response:
    config = state.config
    if config.latency_ms > 0:
        await asyncio.sleep(config.latency_ms / 1000)
    _authenticate(request, state)
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > config.max_bytes:
        raise Refusal(413, MESSAGE_TOO_LARGE)
    fault = state.faults.draw()
    trace.fault = None if fault == "ok" else fault
    document = await _read_document(request, state=state, trace=trace, fault=fault)
    if fault not in ("ok", "slow"):
        return _fault_response(fault, state=state, trace=trace)
    if document is None:
        raise Refusal(500, MESSAGE_NO_FILE)
    payload = {"document_id": str(uuid.uuid4())}
    content = _encode_payload(payload, state=state, encrypted=trace.encrypted)
    if fault == "slow":
        return SlowResponse(content, slow_s=config.slow_s)
    return Response(content, media_type="application/json")


async def _read_document(
    request: Request, *, state: DevServerState, trace: _Trace, fault: str
) -> bytes | None:
    """The uploaded file; under an injected fault a bad body is ignored (None)."""
    try:
        document = await _read_audio(request, state=state, trace=trace)
    except Refusal:
        if fault in ("ok", "slow"):
            raise
        return None
    trace.sha256 = hashlib.sha256(document).hexdigest()
    trace.audio_bytes = len(document)
    return document
