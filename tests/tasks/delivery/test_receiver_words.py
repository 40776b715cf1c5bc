"""What a receiver says about a refused document goes to the store, capped, never to logs.

A FHIR OperationOutcome's diagnostics and an HL7 ACK's text often quote the patient
(subject, PID-3): they are kept in the delivery row (capped, one line) for a person to
read, and the log lines carry the failure's kind and our own words only. Real parts: the
devserver's FHIR endpoint (`fhir_answer="refuse"`) and python-hl7's MLLP listener.
"""

from __future__ import annotations

import logging
from collections import deque

import pytest
from pydantic import SecretStr

from config.settings import DeliverySettings
from storage.interface import UnitOfWorkFactory
from tests.service.mllp_listener import MllpListener, running_listener
from tests.tasks.delivery.delivery_helpers import deliver, delivery_settings, make_done

PATIENT = "MRN-7319-QX"
STORED_CHARS = 400  # our sentence and the receiver's capped words


def _row_message(store: UnitOfWorkFactory, item_id: int) -> str:
    with store.unit_of_work(read_only=True) as uow:
        (row,) = uow.deliveries.deliveries_of_item(item_id)
    assert row.status == "failed"
    return row.error_message or ""


def _logged(caplog: pytest.LogCaptureFixture) -> str:
    return "\n".join(record.getMessage() for record in caplog.records)


def test_fhir_diagnostics_are_stored_capped_and_kept_out_of_logs(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    server = devserver_factory(fhir_answer="refuse")
    uri = "/d/a.wav"
    items = make_done(store, {uri: "words"}, metadata={uri: {"patient_id": PATIENT}})
    settings = delivery_settings(server, sqlite_url)
    delivery = DeliverySettings(target=f"fhir+{server.url}/fhir", fhir_token=server.token)
    stats = deliver(settings.model_copy(update={"delivery": delivery}), store)
    message = _row_message(store, items[uri].id)
    assert stats.failed == 1
    assert PATIENT in message  # the person who looks at the row reads what the server said
    assert len(message) <= STORED_CHARS
    assert "\n" not in message
    assert PATIENT not in _logged(caplog)
    assert "request_rejected" in _logged(caplog)


def test_an_ack_text_is_stored_and_kept_out_of_logs(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    uri = "/d/a.wav"
    with running_listener(MllpListener(script=deque(["AR"]))) as listener:
        items = make_done(store, {uri: "words"}, metadata={uri: {"patient_id": PATIENT}})
        settings = delivery_settings(devserver_factory(), sqlite_url)
        delivery = DeliverySettings(
            target=f"mllp://127.0.0.1:{listener.port}", fhir_token=SecretStr("unused")
        )
        stats = deliver(settings.model_copy(update={"delivery": delivery}), store)
    message = _row_message(store, items[uri].id)
    assert stats.failed == 1
    assert f"scripted AR for {PATIENT}" in message
    assert PATIENT not in _logged(caplog)
    assert "hl7_rejected" in _logged(caplog)
