"""The devserver's transcription route, POST /voice/get-asr (docs/service-contract.md).

Capacity and rate limits answer 429 on arrival; then the shared door (routes_common.py),
the language check, the engine on the uploaded WAV, and text faults on its answer.
"""

from __future__ import annotations

import time
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from devserver.engines import Engine, UnreadableAudio, read_wav
from devserver.routes_common import (
    Trace,
    answer_and_record,
    check_in,
    fault_response,
    identify_upload,
    next_txn_id,
    note_upload,
    read_upload,
    success_response,
)
from devserver.state import DevServerState
from devserver.text_faults import spoil_text
from devserver.uploads import Refusal
from service.contract import TRANSCRIBE_PATH, is_supported_language


async def transcribe_endpoint(request: Request) -> Response:
    """Transcribe one WAV (or play the drawn fault); one ledger line per request."""
    trace = Trace(time=time.time(), language=request.query_params.get("language"))
    return await answer_and_record(request, _admitted_answer, trace=trace)


async def _admitted_answer(request: Request, state: DevServerState, trace: Trace) -> Response:
    """The answer, or a 429 at once for a request over --capacity or --rate."""
    admission = state.capacity.admit()  # on arrival, before latency and work
    trace.in_flight = admission.in_flight
    if admission.refused is not None:
        trace.fault = admission.refused
        # Read the body all the same: the client's socket stays usable.
        await identify_upload(request, state=state, trace=trace)
        return fault_response("429", state=state, trace=trace)
    try:
        return await _answer(request, state, trace)
    finally:
        state.capacity.release()


async def _answer(request: Request, state: DevServerState, trace: Trace) -> Response:
    fault = await check_in(request, state, trace)
    if fault not in ("ok", "slow"):
        await identify_upload(request, state=state, trace=trace)
        return fault_response(fault, state=state, trace=trace)
    language = _check_language(trace.language)
    audio = await read_upload(request, state=state, trace=trace)
    note_upload(audio, trace=trace)
    payload = await _transcribe_audio(audio, language=language, state=state, trace=trace)
    return success_response(payload, state=state, trace=trace, fault=fault)


def _check_language(code: str | None) -> str:
    if not code:
        raise Refusal(400, "the language query parameter is required")
    if not is_supported_language(code):
        raise Refusal(400, f"unsupported language {code[:16]!r}")
    return code


async def _transcribe_audio(
    audio: bytes, *, language: str, state: DevServerState, trace: Trace
) -> dict[str, Any]:
    try:
        text, duration_s = await run_in_threadpool(_run_engine, state.engine, audio, language)
    except UnreadableAudio as exc:
        raise Refusal(400, str(exc)) from exc
    trace.txn_id = next_txn_id(state, trace)
    trace.text_fault = state.text_faults.draw()
    if trace.text_fault is not None:
        text = spoil_text(text, fault=trace.text_fault, language=language)
    return {"text": text, "txn_id": trace.txn_id, "audio_duration": round(duration_s, 3)}


def _run_engine(engine: Engine, audio: bytes, language: str) -> tuple[str, float]:
    samples, sample_rate_hz = read_wav(audio)
    return engine.transcribe(audio, language=language), len(samples) / sample_rate_hz


ROUTES = (Route(TRANSCRIBE_PATH, transcribe_endpoint, methods=["POST"]),)
