"""The devserver's ASGI app: the service contract (DESIGN.md §3, §8) with injected faults."""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from service import jwe
from service.contract import (
    DOCS_PATH,
    MESSAGE_FORBIDDEN,
    MESSAGE_NO_FILE,
    MESSAGE_TOO_LARGE,
    MESSAGE_UNAUTHORIZED,
    TRANSCRIBE_PATH,
    is_supported_language,
)
from service.devserver.capacity import CapacityGuard
from service.devserver.config import DevServerConfig
from service.devserver.engines import Engine, UnreadableAudio, make_engine, read_wav
from service.devserver.faults import FaultInjector
from service.devserver.fhir_store import FhirStore
from service.devserver.ledger import Ledger, LedgerEntry
from service.devserver.responses import (
    DroppedResponse,
    SlowResponse,
    retry_after_value,
    tamper_envelope,
)
from service.devserver.text_faults import TextFaults, spoil_text
from service.devserver.tokens import TokenAuthority, TokenCheck
from service.devserver.uploads import Refusal, audio_from_envelope, audio_from_multipart

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
class DevServerState:
    """Everything one running devserver remembers."""

    config: DevServerConfig
    ledger: Ledger
    tokens: TokenAuthority
    faults: FaultInjector
    engine: Engine
    key: jwe.JweKey | None
    text_faults: TextFaults
    capacity: CapacityGuard
    txn_numbers: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    fhir: FhirStore = field(default_factory=FhirStore)  # /fhir/DocumentReference resources


def build_state(config: DevServerConfig) -> DevServerState:
    """Fresh state for `config`; raises ConfigError or EncryptionError for bad options."""
    key = None
    if config.jwe_key is not None:
        key = jwe.derive_key(config.jwe_key, kid=config.jwe_kid)
    return DevServerState(
        config=config,
        ledger=Ledger(config.ledger_path),
        tokens=TokenAuthority(static_token=config.token, ttl_s=config.token_ttl_s),
        faults=FaultInjector(config),
        engine=make_engine(config.engine),
        key=key,
        text_faults=TextFaults(
            p_empty=config.p_empty,
            p_repeat=config.p_repeat,
            p_wrong_script=config.p_wrong_script,
            seed=config.seed,
        ),
        capacity=CapacityGuard(capacity=config.capacity, rate_per_s=config.rate),
    )


@dataclass
class _Trace:
    """The ledger fields of one request, filled in as it is handled."""

    time: float
    language: str | None
    sha256: str | None = None
    audio_bytes: int = 0
    body_bytes: int = 0
    encrypted: bool = False
    filename: str | None = None
    retry_after_s: float | None = None
    fault: str | None = None
    txn_id: str | None = None
    text_fault: str | None = None
    in_flight: int | None = None

    def entry(self, *, status: int) -> LedgerEntry:
        return LedgerEntry(
            time=self.time,
            status=status,
            language=self.language,
            sha256=self.sha256,
            bytes=self.audio_bytes,
            body_bytes=self.body_bytes,
            encrypted=self.encrypted,
            filename=self.filename,
            retry_after_s=self.retry_after_s,
            fault=self.fault,
            txn_id=self.txn_id,
            text_fault=self.text_fault,
            in_flight=self.in_flight,
        )


def _message(status: int, message: str, *, headers: dict[str, str] | None = None) -> Response:
    return JSONResponse({"message": message}, status_code=status, headers=headers)


async def _transcribe_endpoint(request: Request) -> Response:
    state: DevServerState = request.app.state.devserver
    trace = _Trace(time=time.time(), language=request.query_params.get("language"))
    admission = state.capacity.admit()  # on arrival, before latency and work
    trace.in_flight = admission.in_flight
    try:
        response = await _answer_admitted(request, state, trace, refused=admission.refused)
    except Refusal as refusal:
        response = _message(refusal.status, refusal.message)
    except Exception as exc:  # a devserver bug: still one ledger line and a contract-shaped 500
        logger.error(
            "devserver: unexpected %s handling a request", type(exc).__name__, exc_info=exc
        )
        response = _message(500, MESSAGE_NO_FILE)
    finally:
        if admission.refused is None:
            state.capacity.release()
    status = 0 if isinstance(response, DroppedResponse) else response.status_code
    state.ledger.record(trace.entry(status=status))
    return response


async def _answer_admitted(
    request: Request, state: DevServerState, trace: _Trace, *, refused: str | None
) -> Response:
    """The answer, or a 429 at once for a request over --capacity or --rate."""
    if refused is None:
        return await _answer(request, state, trace)
    trace.fault = refused
    await _identify_audio(request, state=state, trace=trace)  # read the body: keep the socket
    return _fault_response("429", state=state, trace=trace)


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
    if fault not in ("ok", "slow"):
        await _identify_audio(request, state=state, trace=trace)
        return _fault_response(fault, state=state, trace=trace)
    language = _check_language(trace.language)
    audio = await _read_audio(request, state=state, trace=trace)
    payload = await _transcribe_audio(audio, language=language, state=state, trace=trace)
    content = _encode_payload(payload, state=state, encrypted=trace.encrypted)
    if fault == "slow":
        return SlowResponse(content, slow_s=config.slow_s)
    return Response(content, media_type="application/json")


async def _read_audio(request: Request, *, state: DevServerState, trace: _Trace) -> bytes:
    """The uploaded audio (multipart or JWE); raises Refusal for a bad or missing file."""
    body = await _read_body(request, max_bytes=state.config.max_bytes)
    trace.body_bytes = len(body)
    if request.headers.get("x-encryption", "").strip().upper() == "JWE":
        trace.encrypted = True
        return audio_from_envelope(body, key=state.key)
    audio, trace.filename = await audio_from_multipart(request.headers, body)
    return audio


async def _identify_audio(request: Request, *, state: DevServerState, trace: _Trace) -> None:
    """Hash the audio of a request about to get an injected fault (best effort).

    The ledger then ties every attempt of a chunk together, so a test can check, e.g.,
    that the retry after a 429 waited for its Retry-After.
    """
    try:
        audio = await _read_audio(request, state=state, trace=trace)
    except Refusal:
        return
    trace.sha256 = hashlib.sha256(audio).hexdigest()
    trace.audio_bytes = len(audio)


def _authenticate(request: Request, state: DevServerState) -> None:
    check = state.tokens.check(request.headers.get("authorization"))
    if check is TokenCheck.MISSING:
        raise Refusal(401, MESSAGE_UNAUTHORIZED)
    if check is TokenCheck.FORBIDDEN or not state.faults.admit_authenticated():
        raise Refusal(403, MESSAGE_FORBIDDEN)


def _fault_response(fault: str, *, state: DevServerState, trace: _Trace) -> Response:
    config = state.config
    if fault == "429":
        trace.retry_after_s = float(config.retry_after_s)
        value = retry_after_value(config.retry_after_s, http_date=config.retry_after_http_date)
        return _message(429, "Too Many Requests", headers={"Retry-After": value})
    if fault in _FAULT_STATUSES:
        status, message = _FAULT_STATUSES[fault]
        return _message(status, message)
    if fault == "badjson":
        return Response(_BAD_JSON_BODY, media_type="application/json")
    if fault == "notext":  # everything a success carries except the text
        trace.txn_id = _next_txn_id(state, trace)
        payload = {"txn_id": trace.txn_id, "audio_duration": 0.0}
        return Response(
            _encode_payload(payload, state=state, encrypted=trace.encrypted),
            media_type="application/json",
        )
    return DroppedResponse()


def _check_language(code: str | None) -> str:
    if not code:
        raise Refusal(400, "the language query parameter is required")
    if not is_supported_language(code):
        raise Refusal(400, f"unsupported language {code[:16]!r}")
    return code


async def _read_body(request: Request, *, max_bytes: int) -> bytes:
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > max_bytes:
            raise Refusal(413, MESSAGE_TOO_LARGE)
    return bytes(body)


async def _transcribe_audio(
    audio: bytes, *, language: str, state: DevServerState, trace: _Trace
) -> dict[str, Any]:
    trace.sha256 = hashlib.sha256(audio).hexdigest()
    trace.audio_bytes = len(audio)
    try:
        text, duration_s = await run_in_threadpool(_run_engine, state.engine, audio, language)
    except UnreadableAudio as exc:
        raise Refusal(400, str(exc)) from exc
    trace.txn_id = _next_txn_id(state, trace)
    trace.text_fault = state.text_faults.draw()
    if trace.text_fault is not None:
        text = spoil_text(text, fault=trace.text_fault, language=language)
    return {"text": text, "txn_id": trace.txn_id, "audio_duration": round(duration_s, 3)}


def _next_txn_id(state: DevServerState, trace: _Trace) -> str:
    return f"dev-{next(state.txn_numbers):06d}-{(trace.sha256 or 'no-audio')[:8]}"


def _run_engine(engine: Engine, audio: bytes, language: str) -> tuple[str, float]:
    samples, sample_rate_hz = read_wav(audio)
    return engine.transcribe(audio, language=language), len(samples) / sample_rate_hz


def _encode_payload(payload: dict[str, Any], *, state: DevServerState, encrypted: bool) -> bytes:
    plain = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    if not encrypted or state.key is None:
        return plain
    legacy = state.config.legacy_response_tag
    envelope = jwe.encrypt_response(plain, key=state.key, legacy_tag=legacy)
    if state.config.tamper_responses:
        envelope = tamper_envelope(envelope)
    return json.dumps(envelope, separators=(",", ":")).encode("ascii")


async def _http_error(request: Request, exc: Exception) -> Response:
    if isinstance(exc, HTTPException):
        return _message(exc.status_code, str(exc.detail))
    return _message(500, MESSAGE_NO_FILE)


def create_app(config: DevServerConfig, *, state: DevServerState | None = None) -> Starlette:
    """The Starlette app serving POST /voice/get-asr and /mr/api/v2/docs; raises ConfigError."""
    from service.devserver.docs import docs_endpoint  # docs.py builds on this module
    from service.devserver.fhir import fhir_routes  # so does fhir.py

    app = Starlette(
        routes=[
            Route(TRANSCRIBE_PATH, _transcribe_endpoint, methods=["POST"]),
            Route(DOCS_PATH, docs_endpoint, methods=["POST"]),
            *fhir_routes(),
        ],
        exception_handlers={HTTPException: _http_error},
    )
    app.state.devserver = state if state is not None else build_state(config)
    return app
