"""FHIR REST: the devserver's conditional create (FHIR R4) and the client that uses it."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from devserver import RunningDevServer
from service.errors import CredentialsRejected, RequestRejected, ServiceUnavailable
from service.fhir_client import FhirClient, FhirReceipt
from tasks.delivery.fhir_documents import (
    Note,
    build_document_reference,
    resource_json_bytes,
    version_search_token,
)
from tasks.delivery.identity import NoteKey, note_urn, recording_urn
from tests.servers import client_settings


def _note(version: str = "v1", **overrides: Any) -> Note:
    fields: dict[str, Any] = {
        "source": "/d/a.wav",
        "language": "en-IN",
        "status": "done",
        "text": "the patient is well",
        "content_sha256": "ab" * 32,
        "version": version,
        "created_at": datetime(2026, 5, 1, tzinfo=UTC),
        "metadata": {"patient_id": "P1"},
        "document_id": note_urn(NoteKey("STORE001", 1, "en-IN", version)),
        "recording_id": recording_urn(store_id="STORE001", item_id=1, language="en-IN"),
    }
    fields.update(overrides)
    return Note(**fields)


def _body(note: Note) -> bytes:
    return resource_json_bytes(build_document_reference(note))


def _post(server: RunningDevServer, body: bytes, **headers: str) -> httpx.Response:
    sent = {
        "Authorization": f"Bearer {server.token}",
        "Content-Type": "application/fhir+json",
        **headers,
    }
    return httpx.post(f"{server.url}/fhir/DocumentReference", content=body, headers=sent)


def test_conditional_create_is_201_then_200_with_the_same_resource(devserver_factory) -> None:
    server = devserver_factory()
    note = _note()
    condition = version_search_token(note.document_id)
    first = _post(server, _body(note), **{"If-None-Exist": condition})
    second = _post(server, _body(note), **{"If-None-Exist": condition})
    assert first.status_code == 201
    created = first.json()
    assert first.headers["location"].endswith(f"/fhir/DocumentReference/{created['id']}/_history/1")
    assert second.status_code == 200
    assert second.json()["id"] == created["id"]
    assert len(server.state.fhir.resources) == 1
    assert [line.status for line in server.ledger.entries() if "fhir" in line.path] == [201, 200]


def test_a_slow_answer_keeps_its_status_location_and_fhir_type(devserver_factory) -> None:
    server = devserver_factory(fault_script=("slow",), slow_s=0.05)
    note = _note()
    answer = _post(server, _body(note), **{"If-None-Exist": version_search_token(note.document_id)})
    assert answer.status_code == 201
    assert answer.headers["content-type"].startswith("application/fhir+json")
    resource_id = answer.json()["id"]
    assert answer.headers["location"].endswith(f"/DocumentReference/{resource_id}/_history/1")


def test_several_matches_are_412_with_an_operation_outcome(devserver_factory) -> None:
    server = devserver_factory()
    note = _note()
    for _ in range(2):  # plain creates (no If-None-Exist) may make duplicates
        assert _post(server, _body(note)).status_code == 201
    answer = _post(server, _body(note), **{"If-None-Exist": version_search_token(note.document_id)})
    assert answer.status_code == 412
    assert answer.json()["resourceType"] == "OperationOutcome"
    assert len(server.state.fhir.resources) == 2


def test_every_body_is_validated_with_fhir_resources(devserver_factory) -> None:
    server = devserver_factory()
    bad = json.loads(_body(_note()))
    bad["content"] = "not a list"
    answer = _post(server, json.dumps(bad).encode())
    assert answer.status_code == 400
    assert "content" in answer.json()["issue"][0]["diagnostics"]
    assert _post(server, b"{not json").status_code == 400
    assert _post(server, _body(_note()), **{"Content-Type": "text/plain"}).status_code == 415
    no_token = httpx.post(f"{server.url}/fhir/DocumentReference", content=_body(_note()))
    assert no_token.status_code == 401
    assert server.state.fhir.resources == {}


def _client(server: RunningDevServer, **overrides: Any) -> FhirClient:
    service, _ = client_settings(server, enabled=False)
    token = overrides.pop("token", SecretStr(server.token))
    return FhirClient(service, base_url=f"{server.url}/fhir", token=token, **overrides)


def _create(client: FhirClient, note: Note, *, body: bytes | None = None) -> FhirReceipt:
    async def run() -> FhirReceipt:
        try:
            condition = version_search_token(note.document_id)
            return await client.create(body or _body(note), if_none_exist=condition)
        finally:
            await client.aclose()

    return asyncio.run(run())


def test_the_client_creates_then_finds_and_keeps_the_server_id(devserver_factory) -> None:
    server = devserver_factory()
    first = _create(_client(server), _note())
    again = _create(_client(server), _note())
    assert (first.status, again.status) == (201, 200)
    assert first.resource_id == again.resource_id
    assert first.reference == f"DocumentReference/{first.resource_id}"
    stored = server.state.fhir.resources[first.resource_id]
    assert stored["masterIdentifier"]["value"].startswith("urn:uuid:")


def test_429_and_a_dropped_answer_are_retried_and_file_one_resource(devserver_factory) -> None:
    server = devserver_factory(fault_script=("429", "reset", "503"), retry_after_s=0)
    receipt = _create(_client(server), _note())
    statuses = [line.status for line in server.ledger.entries() if "fhir" in line.path]
    # The reset filed the resource and lost the answer; the resend found it (200).
    assert statuses == [429, 0, 503, 200]
    assert receipt.status == 200
    assert len(server.state.fhir.resources) == 1


def test_412_and_an_operation_outcome_are_failures_with_their_text(devserver_factory) -> None:
    server = devserver_factory()
    note = _note()
    for _ in range(2):
        _post(server, _body(note))
    with pytest.raises(RequestRejected, match="more than one DocumentReference") as caught:
        _create(_client(server), note)
    assert caught.value.status == 412
    with pytest.raises(RequestRejected, match=r"HTTP 400") as refused:
        _create(_client(server), _note("v9"), body=b'{"resourceType": "DocumentReference"}')
    assert refused.value.status == 400
    assert "content" in refused.value.detail  # the server's words: stored, never logged


def test_no_token_and_a_refused_token_stop_with_credentials(devserver_factory) -> None:
    server = devserver_factory()
    with pytest.raises(CredentialsRejected, match="MEDASR_FHIR_TOKEN"):
        _create(_client(server, token=None), _note())
    with pytest.raises(CredentialsRejected):
        _create(_client(server, token=SecretStr("wrong")), _note())


def test_a_server_that_keeps_failing_is_unavailable(devserver_factory) -> None:
    server = devserver_factory(fault_script=("503",) * 10)
    with pytest.raises(ServiceUnavailable):
        _create(_client(server), _note())
    assert server.state.fhir.resources == {}
