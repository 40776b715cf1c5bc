"""The delivery target settings: names, bounds, descriptions, the secret FHIR token."""

from __future__ import annotations

import pytest

from config.errors import ConfigError
from config.settings import DeliveryTargetSettings, load_settings


def test_the_target_and_the_fhir_token_arrive_from_their_variables(monkeypatch) -> None:
    monkeypatch.setenv("MEDASR_DELIVERY__TARGET", "mllp://127.0.0.1:2575")
    monkeypatch.setenv("MEDASR_FHIR_TOKEN", " fhir-secret \n")
    monkeypatch.setenv("MEDASR_DELIVERY__HL7_RECEIVING_FACILITY", "WARD7")
    delivery = load_settings().delivery
    assert delivery.target == "mllp://127.0.0.1:2575"
    assert delivery.fhir_token is not None
    assert delivery.fhir_token.get_secret_value() == "fhir-secret"
    assert "fhir-secret" not in repr(delivery)
    assert delivery.hl7_receiving_facility == "WARD7"


def test_defaults_keep_todays_behaviour() -> None:
    delivery = load_settings().delivery
    assert (delivery.target, delivery.fhir_token, delivery.hl7_doc_type) == ("docs", None, "TN")


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("MEDASR_DELIVERY__HL7_ACK_TIMEOUT_S", "0"),
        ("MEDASR_DELIVERY__HL7_RESENDS", "-1"),
        ("MEDASR_DELIVERY__HL7_SENDING_APPLICATION", "X" * 21),
    ],
)
def test_out_of_bounds_values_are_configuration_errors(monkeypatch, variable, value) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError, match=variable):
        load_settings()


def test_every_target_field_has_a_description() -> None:
    for name, info in DeliveryTargetSettings.model_fields.items():
        assert info.description, name
