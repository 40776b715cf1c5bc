"""What a FHIR server answers to a create is checked, never trusted.

A created id is taken only from a DocumentReference body or from a `Location` under the
target's own base for `DocumentReference/<id>` (FHIR R4: `[base]/[type]/[id]/_history/
[vid]`). A 201 whose body is an OperationOutcome, or whose Location is on another host or
at a Patient, names no document: the delivery is in doubt, never delivered under a wrong
id (that id would later go into `relatesTo.replaces`). Real parts: the devserver's FHIR
endpoint on loopback, answering as `fhir_answer` says.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from config.settings import DeliverySettings, PipelineSettings
from devserver import RunningDevServer
from service.fhir_client import FhirClient, FhirReceipt, created_id
from storage.interface import UnitOfWorkFactory
from tasks.delivery.fhir_documents import (
    Note,
    build_document_reference,
    resource_json_bytes,
    version_search_token,
)
from tasks.delivery.identity import NoteKey, note_urn, recording_urn
from tests.servers import client_settings
from tests.tasks.delivery.delivery_helpers import deliver, delivery_settings, make_done

BASE = "https://ehr.example/fhir/R4"


def _note() -> Note:
    return Note(
        source="/d/a.wav",
        language="en-IN",
        status="done",
        text="the patient is well",
        content_sha256="ab" * 32,
        version="v1",
        created_at=datetime(2026, 5, 1, tzinfo=UTC),
        metadata={"patient_id": "P1"},
        document_id=note_urn(NoteKey("STORE001", 1, "en-IN", "v1")),
        recording_id=recording_urn(store_id="STORE001", item_id=1, language="en-IN"),
    )


def _create(server: RunningDevServer) -> FhirReceipt:
    service, _ = client_settings(server, enabled=False)
    client = FhirClient(service, base_url=f"{server.url}/fhir", token=SecretStr(server.token))
    note = _note()
    body = resource_json_bytes(build_document_reference(note))

    async def run() -> FhirReceipt:
        async with client:
            return await client.create(body, if_none_exist=version_search_token(note.document_id))

    return asyncio.run(run())


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ("outcome", "OperationOutcome"),
        ("foreign", "another server"),
        ("patient", "not a DocumentReference"),
    ],
)
def test_a_create_answer_that_names_no_document_of_ours_gives_no_id(
    devserver_factory, answer: str, why: str
) -> None:
    server = devserver_factory(fhir_answer=answer)
    receipt = _create(server)
    assert len(server.state.fhir.resources) == 1  # filed all the same
    assert (receipt.status, receipt.resource_id, receipt.reference) == (201, None, None)
    assert why in (receipt.unconfirmed or "")


def test_the_resource_answer_gives_its_id(devserver_factory) -> None:
    server = devserver_factory()
    receipt = _create(server)
    (stored,) = server.state.fhir.resources
    assert (receipt.resource_id, receipt.unconfirmed) == (stored, None)


def _answer(status: int, *, body: Any = None, location: str | None = None) -> httpx.Response:
    request = httpx.Request("POST", f"{BASE}/DocumentReference")
    headers = {"Location": location} if location else {}
    return httpx.Response(status, json=body, headers=headers, request=request)


@pytest.mark.parametrize(
    "location",
    [
        f"{BASE}/DocumentReference/abc-1",
        f"{BASE}/DocumentReference/abc-1/_history/3",
        "/fhir/R4/DocumentReference/abc-1/_history/1",  # relative to the request
        "https://EHR.example:443/fhir/R4/DocumentReference/abc-1",
    ],
)
def test_a_location_under_our_base_names_the_document(location: str) -> None:
    assert created_id(_answer(201, body=None, location=location)) == ("abc-1", None)


@pytest.mark.parametrize(
    ("location", "why"),
    [
        ("https://other.example/fhir/R4/DocumentReference/abc-1", "another server"),
        ("http://ehr.example/fhir/R4/DocumentReference/abc-1", "another server"),
        (f"{BASE}/Patient/abc-1", "not a DocumentReference"),
        ("https://ehr.example/fhir/R5/DocumentReference/abc-1", "not a DocumentReference"),
        (f"{BASE}/DocumentReference/abc-1/extra", "not a DocumentReference"),
        (f"{BASE}/DocumentReference/{'x' * 65}", "not a DocumentReference"),
    ],
)
def test_a_location_elsewhere_names_nothing(location: str, why: str) -> None:
    resource_id, problem = created_id(_answer(201, location=location))
    assert resource_id is None
    assert why in (problem or "")


def test_a_body_and_a_location_that_disagree_are_in_doubt() -> None:
    body = {"resourceType": "DocumentReference", "id": "abc-2"}
    assert created_id(_answer(200, body=body)) == ("abc-2", None)
    resource_id, problem = created_id(
        _answer(201, body=body, location=f"{BASE}/DocumentReference/abc-1")
    )
    assert resource_id is None
    assert "disagree" in (problem or "")
    foreign = "https://other.example/fhir/R4/DocumentReference/abc-2"
    assert created_id(_answer(201, body=body, location=foreign))[0] is None
    outcome = {"resourceType": "OperationOutcome", "id": "oo-1"}
    assert created_id(_answer(201, body=outcome))[0] is None


def test_a_deliver_run_keeps_such_a_document_in_doubt_not_delivered(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    server = devserver_factory(fhir_answer="outcome")
    uri = "/d/a.wav"
    items = make_done(store, {uri: "words"}, metadata={uri: {"patient_id": "MRN-1"}})
    settings = delivery_settings(server, sqlite_url)
    delivery = DeliverySettings(target=f"fhir+{server.url}/fhir", fhir_token=server.token)
    stats = deliver(settings.model_copy(update={"delivery": delivery}), store)
    with store.unit_of_work(read_only=True) as uow:
        (row,) = uow.deliveries.deliveries_of_item(items[uri].id)
    assert (stats.delivered, stats.in_doubt) == (0, 1)
    assert (row.status, row.remote_id) == ("in_doubt", None)
    assert "OperationOutcome" in (row.error_message or "")


def test_a_document_reference_of_another_identifier_or_patient_is_not_ours() -> None:
    sent = {
        "resourceType": "DocumentReference",
        "masterIdentifier": {"system": "urn:ietf:rfc:3986", "value": "urn:uuid:1"},
        "subject": {"identifier": {"value": "PAT-B"}},
    }
    same = {
        **sent,
        "id": "abc-1",
        "subject": {"reference": "Patient/9", "identifier": {"value": "PAT-B"}},
    }
    assert created_id(_answer(200, body=same), sent=sent) == ("abc-1", None)
    other_patient = {**same, "subject": {"identifier": {"value": "PAT-A"}}}
    resource_id, problem = created_id(_answer(200, body=other_patient), sent=sent)
    assert (resource_id, "another subject" in (problem or "")) == (None, True)
    other_note = {
        **same,
        "masterIdentifier": {"system": "urn:ietf:rfc:3986", "value": "urn:uuid:2"},
    }
    resource_id, problem = created_id(_answer(200, body=other_note), sent=sent)
    assert (resource_id, "another masterIdentifier" in (problem or "")) == (None, True)


def test_a_server_answering_with_another_patients_note_leaves_the_second_in_doubt(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    server = devserver_factory(fhir_answer="first")
    texts = {"/d/bed1.wav": "ward round", "/d/bed2.wav": "ward round, second bed"}
    metadata = {"/d/bed1.wav": {"patient_id": "PAT-A"}, "/d/bed2.wav": {"patient_id": "PAT-B"}}
    items = make_done(store, texts, metadata=metadata)
    settings = delivery_settings(server, sqlite_url)
    delivery = DeliverySettings(target=f"fhir+{server.url}/fhir", fhir_token=server.token)
    settings = settings.model_copy(
        update={"delivery": delivery, "pipeline": PipelineSettings(concurrency=1)}
    )
    stats = deliver(settings, store)
    with store.unit_of_work(read_only=True) as uow:
        rows = {uri: uow.deliveries.deliveries_of_item(i.id)[-1] for uri, i in items.items()}
    assert (stats.delivered, stats.in_doubt) == (1, 1)
    assert rows["/d/bed1.wav"].status == "delivered"
    second = rows["/d/bed2.wav"]
    assert (second.status, second.remote_id) == ("in_doubt", None)
    assert "another document" in (second.error_message or "")
