"""What a receiver says about a refused document goes to the store, capped, never to logs.

A FHIR OperationOutcome's diagnostics and an HL7 ACK's text often quote the patient
(subject, PID-3): they are kept in the delivery row (capped, one line) for a person to
read, and the log lines carry the failure's kind and our own words only. Real parts: the
devserver's FHIR endpoint (`fhir_answer="refuse"`) and python-hl7's MLLP listener.
"""

from __future__ import annotations

import json
import logging
from collections import deque

import pytest
from pydantic import SecretStr

from config.errors import ConfigError
from config.settings import DeliverySettings
from storage.interface import UnitOfWorkFactory
from tests.helpers.http_gateway import Gateway, gateway
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


def _deliver_to(
    script: Gateway, devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> str:
    """One note delivered to `script`'s server as a FHIR server; the failed row's message."""
    uri = "/d/a.wav"
    items = make_done(store, {uri: "words"}, metadata={uri: {"patient_id": PATIENT}})
    settings = delivery_settings(devserver_factory(), sqlite_url, max_attempts=1)
    delivery = DeliverySettings(target=f"fhir+{script.url}/fhir", fhir_token=SecretStr("tok"))
    stats = deliver(settings.model_copy(update={"delivery": delivery}), store)
    assert stats.failed == 1
    return _row_message(store, items[uri].id)


@pytest.mark.parametrize("status", [409, 422])
def test_a_gateways_json_message_is_stored_not_logged_and_names_the_fhir_server(
    devserver_factory,
    store: UnitOfWorkFactory,
    sqlite_url: str,
    caplog: pytest.LogCaptureFixture,
    status: int,
) -> None:
    caplog.set_level(logging.DEBUG)
    body = json.dumps({"message": f"no patient {PATIENT} in this ward"}).encode()
    script = Gateway(status, {"Content-Type": "application/json"}, body)
    with gateway(script):
        message = _deliver_to(script, devserver_factory, store, sqlite_url)
    assert PATIENT not in _logged(caplog)
    assert PATIENT in message  # kept with the row for the person who looks
    assert message.startswith("the FHIR server ")  # not "the service": another receiver


def test_a_redirect_from_the_fhir_server_stops_the_delivery_and_points_at_its_target(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    """Every note would meet it: the delivery stops by configuration (as a run does at a
    redirect from the service), the note waits undelivered, the redirect is not followed."""
    make_done(store, {"/d/a.wav": "words"}, metadata={"/d/a.wav": {"patient_id": PATIENT}})
    settings = delivery_settings(devserver_factory(), sqlite_url, max_attempts=1)
    with gateway(Gateway(200)) as elsewhere:
        script = Gateway(307, {"Location": f"{elsewhere.url}/fhir/DocumentReference"})
        with gateway(script):
            delivery = DeliverySettings(
                target=f"fhir+{script.url}/fhir", fhir_token=SecretStr("tok")
            )
            stats = deliver(settings.model_copy(update={"delivery": delivery}), store)
    assert elsewhere.paths == []  # neither the note nor the token went to the other host
    assert (stats.failed, stats.released, stats.delivered) == (0, 1, 0)
    assert isinstance(stats.stopped, ConfigError)
    assert "MEDASR_DELIVERY__TARGET" in stats.stopped.message
    assert "MEDASR_BASE_URL" not in stats.stopped.message


def test_the_docs_uploads_own_words_are_stored_not_logged(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    # The upload carries the patient link in its query: a refusal often names it back.
    caplog.set_level(logging.DEBUG, logger="medasr")  # httpx's own lines never reach a user
    uri = "/d/a.wav"
    items = make_done(store, {uri: "words"}, metadata={uri: {"patient_id": PATIENT}})
    body = json.dumps({"message": f"patient_id {PATIENT} is not on file"}).encode()
    with gateway(Gateway(422, {"Content-Type": "application/json"}, body)) as script:
        settings = delivery_settings(
            devserver_factory(), sqlite_url, docs_query="patient_id={patient_id}"
        )
        service = settings.service.model_copy(update={"base_url": script.url})
        stats = deliver(settings.model_copy(update={"service": service}), store)
    message = _row_message(store, items[uri].id)
    assert stats.failed == 1
    assert PATIENT not in _logged(caplog)
    assert PATIENT in message  # kept with the row for the person who looks
    assert "HTTP 422" in _logged(caplog)
