"""The devserver's document upload, POST /mr/api/v2/docs: plain multipart or JWE.

Same door as transcription (routes_common.py): the same token check, the same size cap,
the same fault draws (429 with Retry-After, 5xx, resets, slow and bad bodies) and the
same ledger, whose lines here carry the document's sha256 and size, the path and the
query. An accepted document gets `{"document_id": "<uuid>"}`, encrypted when the
request was.
"""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from devserver.received import ReceivedDocument
from devserver.routes_common import (
    Trace,
    answer_and_record,
    check_in,
    fault_response,
    identify_upload,
    note_upload,
    read_upload,
    success_response,
)
from devserver.state import DevServerState
from service.contract import DOCS_PATH


async def docs_endpoint(request: Request) -> Response:
    """Accept one document (or play the drawn fault); one ledger line per request."""
    trace = Trace(time=time.time(), language=None, path=DOCS_PATH, query=request.url.query or None)
    return await answer_and_record(request, _answer, trace=trace)


async def _answer(request: Request, state: DevServerState, trace: Trace) -> Response:
    fault = await check_in(request, state, trace)
    if fault not in ("ok", "slow"):
        await identify_upload(request, state=state, trace=trace)
        return fault_response(fault, state=state, trace=trace)
    document = await read_upload(request, state=state, trace=trace)  # Refusal if bad
    note_upload(document, trace=trace)
    payload = {"document_id": str(uuid.uuid4())}
    state.received.keep(
        _received(request, document, trace=trace, document_id=payload["document_id"])
    )
    return success_response(payload, state=state, trace=trace, fault=fault)


def _received(
    request: Request, content: bytes, *, trace: Trace, document_id: str
) -> ReceivedDocument:
    """What GET /received shows of an accepted document."""
    at = datetime.fromtimestamp(trace.time, tz=UTC).isoformat(timespec="seconds")
    return ReceivedDocument(
        document_id=document_id,
        received_at=at.replace("+00:00", "Z"),
        filename=trace.filename,
        query=dict(request.query_params),
        encrypted=trace.encrypted,
        bytes=len(content),
        sha256=trace.sha256 or "",
        text=content.decode("utf-8", errors="replace"),
    )


ROUTES = (Route(DOCS_PATH, docs_endpoint, methods=["POST"]),)
