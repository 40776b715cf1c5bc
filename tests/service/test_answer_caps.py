"""Every answer is read up to a cap (MEDASR_SERVICE__MAX_ANSWER_BYTES), never whole.

Real parts: the devserver's `endless` fault, a 2xx (201 on FHIR, after filing) whose body
never ends, over loopback. The client stops at the cap with a typed error; a delivery so
answered is in doubt (the receiver accepted it), and medasr's memory stays bounded.
"""

from __future__ import annotations

import asyncio
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from config.settings import DeliverySettings
from devserver import RunningDevServer
from service.docs_client import DocsClient, Document
from service.errors import AnswerTooLarge
from service.fhir_client import FhirClient
from storage.interface import UnitOfWorkFactory
from tasks.delivery.fhir_documents import Note, build_document_reference, resource_json_bytes
from tasks.delivery.identity import NoteKey, note_urn, recording_urn
from tests.servers import client_settings
from tests.tasks.delivery.delivery_helpers import deliver, delivery_settings, make_done

CAP_BYTES = 1_000_000
# Far below what reading the endless body until the request timeout would take.
GROWTH_BOUND_BYTES = 200_000_000


def _resident_bytes() -> int:
    resident_pages = int(Path("/proc/self/statm").read_text().split()[1])
    return resident_pages * os.sysconf("SC_PAGE_SIZE")


def _resource_bytes() -> bytes:
    note = Note(
        source="/d/a.wav",
        language="en-IN",
        status="done",
        text="words",
        content_sha256="ab" * 32,
        version="v1",
        created_at=datetime(2026, 5, 1, tzinfo=UTC),
        metadata={"patient_id": "P1"},
        document_id=note_urn(NoteKey("STORE001", 1, "en-IN", "v1")),
        recording_id=recording_urn(store_id="STORE001", item_id=1, language="en-IN"),
    )
    return resource_json_bytes(build_document_reference(note))


def _run(call: Any) -> Any:
    return asyncio.run(call())


def test_an_endless_fhir_answer_stops_at_the_cap_with_a_typed_error(devserver_factory) -> None:
    server = devserver_factory(fault_script=("endless",))
    service, _ = client_settings(server, enabled=False, max_answer_bytes=CAP_BYTES)
    client = FhirClient(service, base_url=f"{server.url}/fhir", token=SecretStr(server.token))

    async def create() -> None:
        async with client:
            await client.create(_resource_bytes(), if_none_exist="identifier=urn:x|y")

    before = _resident_bytes()
    with pytest.raises(AnswerTooLarge, match="MEDASR_SERVICE__MAX_ANSWER_BYTES") as caught:
        _run(create)
    assert _resident_bytes() - before < GROWTH_BOUND_BYTES
    assert caught.value.status == 201
    assert caught.value.kind == "answer_too_large"


def test_an_endless_docs_answer_stops_at_the_cap(devserver_factory) -> None:
    server = devserver_factory(fault_script=("endless",))
    service, encryption = client_settings(server, max_answer_bytes=CAP_BYTES)
    document = Document(b"words", "a.txt", "text/plain")

    async def upload() -> None:
        async with DocsClient(service, encryption) as client:
            await client.upload(document)

    with pytest.raises(AnswerTooLarge):
        _run(upload)
    assert len([e for e in server.ledger.entries() if e.fault == "endless"]) == 1  # no retry


def test_a_delivery_answered_endlessly_is_in_doubt_then_found_by_the_next_run(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    server: RunningDevServer = devserver_factory(fault_script=("endless",))
    uri = "/d/a.wav"
    items = make_done(store, {uri: "words"}, metadata={uri: {"patient_id": "MRN-1"}})
    settings = delivery_settings(server, sqlite_url, max_answer_bytes=CAP_BYTES)
    delivery = DeliverySettings(target=f"fhir+{server.url}/fhir", fhir_token=server.token)
    settings = settings.model_copy(update={"delivery": delivery})
    first = deliver(settings, store)
    with store.unit_of_work(read_only=True) as uow:
        (row,) = uow.deliveries.deliveries_of_item(items[uri].id)
    assert (first.delivered, first.in_doubt, row.status) == (0, 1, "in_doubt")
    assert row.error_kind == "answer_too_large"
    second = deliver(settings, store)  # conditional create: the server finds the one it filed
    (resource_id,) = server.state.fhir.resources
    with store.unit_of_work(read_only=True) as uow:
        (row,) = uow.deliveries.deliveries_of_item(items[uri].id)
    assert (second.delivered, row.status) == (1, "delivered")
    assert row.remote_id == f"DocumentReference/{resource_id}"
