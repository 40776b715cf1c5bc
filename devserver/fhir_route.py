"""The devserver's FHIR R4 endpoint: conditional create of DocumentReference, and search.

`POST /fhir/DocumentReference` validates every body with fhir.resources and, with an
`If-None-Exist: identifier=<system>|<value>` header, creates only when nothing matches
(201 with `Location`), answers 200 with the one resource that matches, or 412 when
several do (FHIR R4 http.html, conditional create). Errors are OperationOutcomes.
Same door as the other routes: the token check, the fault draws (429 with Retry-After,
5xx, slow bodies) and the ledger. A `reset` fault files the resource and then drops
the answer: the lost reply that makes a sender resend.
`GET /fhir/DocumentReference?identifier=...` returns a searchset Bundle;
`GET /fhir/DocumentReference/{id}` one resource.
"""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import parse_qsl

from fhir.resources.R4B.documentreference import DocumentReference
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from devserver.responses import DroppedResponse, EndlessResponse, SlowResponse
from devserver.routes_common import (
    Trace,
    _authenticate,
    _read_body,
    answer_and_record,
    check_in,
    fault_response,
)
from devserver.state import DevServerState
from devserver.uploads import Refusal

FHIR_PATH = "/fhir/DocumentReference"
FHIR_JSON = "application/fhir+json"
_PASSED_FAULTS = ("ok", "slow", "notext", "reset", "endless")  # played after the create


def outcome(status: int, diagnostics: str, *, code: str = "invalid") -> Response:
    """An OperationOutcome with one error issue."""
    body = {
        "resourceType": "OperationOutcome",
        "issue": [{"severity": "error", "code": code, "diagnostics": diagnostics}],
    }
    return JSONResponse(body, status_code=status, media_type=FHIR_JSON)


async def fhir_create_endpoint(request: Request) -> Response:
    """Create (or match) one DocumentReference; one ledger line per request."""
    trace = Trace(time=time.time(), language=None, path=FHIR_PATH)
    return await answer_and_record(request, _create, trace=trace)


async def _create(request: Request, state: DevServerState, trace: Trace) -> Response:
    try:
        fault = await check_in(request, state, trace)
    except Refusal as refusal:  # 401/403/413 as OperationOutcomes
        return outcome(refusal.status, refusal.message, code="security")
    body = await _read_body(request, max_bytes=state.config.max_bytes)
    trace.body_bytes = len(body)
    if fault not in _PASSED_FAULTS:
        return fault_response(fault, state=state, trace=trace)
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type not in (FHIR_JSON, "application/json"):
        return outcome(415, f"Content-Type must be {FHIR_JSON}, not {media_type[:40]!r}")
    resource, problem = _validated(body)
    if resource is None:
        return outcome(400, problem)
    condition, problem = _condition(request.headers.get("if-none-exist"))
    if problem:
        return outcome(400, problem)
    if state.config.fhir_answer == "refuse":  # as servers do: quote the subject, at length
        subject = (resource.get("subject") or {}).get("identifier", {}).get("value", "")
        said = f"business rule failed for subject {subject}:\n" + "the reason is long. " * 500
        return outcome(422, said, code="business-rule")
    if state.config.fhir_answer == "first" and state.fhir.resources:
        # A server that matches too loosely: another patient's note for this one.
        first = next(iter(state.fhir.resources.values()))
        return _created_response(request, 200, first, fault=fault, state=state)
    created = state.fhir.create(resource, if_none_exist=condition)
    if created.status == 412:
        why = f"{created.matches} resources match If-None-Exist {condition}"
        return outcome(412, why, code="duplicate")
    stored = created.resource or {}
    return _created_response(request, created.status, stored, fault=fault, state=state)


def _created_response(
    request: Request, status: int, resource: dict[str, Any], *, fault: str, state: DevServerState
) -> Response:
    if fault == "reset":
        return DroppedResponse()  # filed, but the answer is lost
    if fault == "endless":
        return EndlessResponse(status_code=status, media_type=FHIR_JSON)
    base = str(request.base_url).rstrip("/")
    location = f"{base}{FHIR_PATH}/{resource['id']}"
    if status == 201:
        location += "/_history/1"
    answer = state.config.fhir_answer
    if answer in ("outcome", "foreign", "patient"):
        return _misleading_answer(answer, status, base=base, resource_id=resource["id"])
    content = json.dumps(resource, separators=(",", ":")).encode("utf-8")
    headers = {"Location": location}
    if fault == "slow":  # the same answer, its body dribbled
        slow_s = state.config.slow_s
        return SlowResponse(
            content, slow_s=slow_s, status_code=status, media_type=FHIR_JSON, headers=headers
        )
    return Response(content, status_code=status, media_type=FHIR_JSON, headers=headers)


def _misleading_answer(answer: str, status: int, *, base: str, resource_id: str) -> Response:
    """The resource is filed; the answer names it wrongly, or not at all."""
    said = {"severity": "information", "code": "informational", "diagnostics": "created"}
    body: dict[str, Any] = {"resourceType": "OperationOutcome", "issue": [said]}
    headers: dict[str, str] = {}
    if answer == "outcome":  # an id of its own, no Location: nothing names the document
        body["id"] = f"outcome-{resource_id[:8]}"
    elif answer == "foreign":
        headers["Location"] = f"http://elsewhere.invalid/fhir/DocumentReference/{resource_id}"
    else:  # "patient"
        headers["Location"] = f"{base}/fhir/Patient/{resource_id}/_history/1"
    content = json.dumps(body, separators=(",", ":")).encode("utf-8")
    return Response(content, status_code=status, media_type=FHIR_JSON, headers=headers)


def _validated(body: bytes) -> tuple[dict[str, Any] | None, str]:
    """The body as a JSON object that fhir.resources accepts as a DocumentReference."""
    try:
        data = json.loads(body)
        DocumentReference.model_validate(data)
    except ValueError as exc:  # JSONDecodeError and pydantic's ValidationError
        if isinstance(exc, ValidationError):
            where = sorted({".".join(str(p) for p in e["loc"][:3]) for e in exc.errors()})
            return None, f"not a valid DocumentReference at {', '.join(where[:3])}"
        return None, "the body is not JSON"
    if not isinstance(data, dict) or data.get("resourceType") != "DocumentReference":
        return None, "the body is not a DocumentReference"
    return data, ""


def _condition(header: str | None) -> tuple[str | None, str]:
    """The identifier token of If-None-Exist (None without the header)."""
    if header is None:
        return None, ""
    pairs = parse_qsl(header.strip().split("?")[-1], keep_blank_values=True)
    names = {name for name, _ in pairs}
    if names != {"identifier"} or len(pairs) != 1 or not pairs[0][1]:
        return None, "If-None-Exist supports exactly one identifier=<system>|<value> here"
    return pairs[0][1], ""


def _refused(request: Request, state: DevServerState) -> Response | None:
    """An OperationOutcome for a missing (401) or refused (403) token; None when it is good."""
    try:
        _authenticate(request, state)
    except Refusal as refusal:
        return outcome(refusal.status, refusal.message, code="security")
    return None


async def fhir_search_endpoint(request: Request) -> Response:
    """A searchset Bundle of the resources matching ?identifier= (all without it)."""
    state: DevServerState = request.app.state.devserver
    refused = _refused(request, state)
    if refused is not None:
        return refused
    token = request.query_params.get("identifier")
    found = state.fhir.search(token) if token else list(state.fhir.resources.values())
    bundle = {
        "resourceType": "Bundle",
        "type": "searchset",
        "total": len(found),
        "entry": [{"resource": r} for r in found],
    }
    return JSONResponse(bundle, media_type=FHIR_JSON)


async def fhir_read_endpoint(request: Request) -> Response:
    """One resource by id, or 404."""
    state: DevServerState = request.app.state.devserver
    refused = _refused(request, state)
    if refused is not None:
        return refused
    resource = state.fhir.resources.get(request.path_params["resource_id"])
    if resource is None:
        return outcome(404, "no such DocumentReference", code="not-found")
    return JSONResponse(resource, media_type=FHIR_JSON)


ROUTES = (
    Route(FHIR_PATH, fhir_create_endpoint, methods=["POST"]),
    Route(FHIR_PATH, fhir_search_endpoint, methods=["GET"]),
    Route(FHIR_PATH + "/{resource_id}", fhir_read_endpoint, methods=["GET"]),
)
