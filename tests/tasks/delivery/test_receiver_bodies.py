"""A receiver's answer that JSON parsers choke on (nested past Python's recursion limit).

A 2xx so answered was accepted: the note may be filed, so the row is in doubt; a 4xx so
answered is a refusal. Neither is an internal error with a traceback in the log. Real
parts: a loopback HTTP server answering as scripted, and the devserver for the settings.
"""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from config.settings import DeliverySettings
from storage.interface import UnitOfWorkFactory
from tests.helpers.http_gateway import Gateway, gateway
from tests.tasks.delivery.delivery_helpers import deliver, delivery_settings, make_done, rows_of

DEEP = b"[" * 100_000 + b"]" * 100_000  # 200 kB, far under the answer cap


@pytest.mark.parametrize(
    ("target", "status", "outcome"),
    [
        ("fhir", 201, ("in_doubt", "in_doubt")),
        ("docs", 200, ("in_doubt", "invalid_response")),
        ("fhir", 400, ("failed", "request_rejected")),
    ],
)
def test_a_body_nested_too_deep_is_read_as_no_answer_not_an_internal_error(
    devserver_factory,
    store: UnitOfWorkFactory,
    sqlite_url: str,
    caplog: pytest.LogCaptureFixture,
    target: str,
    status: int,
    outcome: tuple[str, str],
) -> None:
    uri = "/d/a.wav"
    items = make_done(store, {uri: "words"}, metadata={uri: {"patient_id": "MRN-1"}})
    with gateway(Gateway(status, {"Content-Type": "application/json"}, DEEP)) as script:
        settings = delivery_settings(devserver_factory(), sqlite_url, max_attempts=1)
        if target == "fhir":
            where = DeliverySettings(target=f"fhir+{script.url}/fhir", fhir_token=SecretStr("t"))
        else:
            where = DeliverySettings(docs_query="patient_id={patient_id}")
            service = settings.service.model_copy(update={"base_url": script.url})
            settings = settings.model_copy(update={"service": service})
        deliver(settings.model_copy(update={"delivery": where}), store)
    (row,) = rows_of(store, items[uri])
    assert (row.status, row.error_kind) == outcome
    assert not [r for r in caplog.records if r.exc_info]  # no traceback
