"""check_service_config: what the client would refuse, refused before any work as ConfigError."""

from __future__ import annotations

import inspect
from pathlib import Path

import certifi
import pytest
from pydantic import SecretStr

from config.errors import ConfigError
from config.settings import EncryptionSettings, ServiceSettings, load_settings
from service.preflight import check_service_config

KEY = "0123456789abcdef"


def check_environment(monkeypatch: pytest.MonkeyPatch, **variables: str) -> None:
    """load_settings() then check_service_config(), as a flow does before Prefect starts."""
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    settings = load_settings()
    check_service_config(service=settings.service, encryption=settings.encryption)


def test_the_signature_is_the_one_flows_call() -> None:
    parameters = inspect.signature(check_service_config).parameters
    assert list(parameters) == ["service", "encryption"]
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in parameters.values())


@pytest.mark.parametrize(
    "variables",
    [
        {},
        {"MEDASR_BASE_URL": "http://127.0.0.1:8765"},
        {"MEDASR_BASE_URL": "http://localhost:8765"},
        {"MEDASR_BASE_URL": "http://asr.internal:80", "MEDASR_ALLOW_INSECURE_HTTP": "true"},
        {"MEDASR_CA_BUNDLE": certifi.where()},
        {"MEDASR_ENCRYPT": "true", "MEDASR_JWE_KEY": KEY, "MEDASR_JWE_KID": "k1"},
    ],
    ids=["defaults", "loopback-ip", "localhost", "insecure-allowed", "ca-bundle", "encrypted"],
)
def test_good_settings_pass(monkeypatch, variables: dict[str, str]) -> None:
    check_environment(monkeypatch, **variables)


@pytest.mark.parametrize(
    ("variables", "names"),
    [
        pytest.param(
            {"MEDASR_BASE_URL": "http://asr.example.org"},
            ["MEDASR_BASE_URL", "MEDASR_ALLOW_INSECURE_HTTP"],
            id="http-remote",
        ),
        pytest.param(
            {"MEDASR_BASE_URL": "http://192.0.2.7:8080", "MEDASR_ALLOW_INSECURE_HTTP": "false"},
            ["MEDASR_BASE_URL", "MEDASR_ALLOW_INSECURE_HTTP"],
            id="http-remote-ip",
        ),
        pytest.param({"MEDASR_BASE_URL": "ftp://asr.example.org"}, ["MEDASR_BASE_URL"], id="ftp"),
        pytest.param({"MEDASR_BASE_URL": "https://"}, ["MEDASR_BASE_URL"], id="no-host"),
        pytest.param(
            {"MEDASR_CA_BUNDLE": "/nonexistent/ca.pem"}, ["MEDASR_CA_BUNDLE"], id="ca-missing"
        ),
        pytest.param(
            {"MEDASR_ENCRYPT": "true", "MEDASR_JWE_KEY": "tiny-key"},
            ["MEDASR_JWE_KEY"],
            id="jwe-key-short",
        ),
        pytest.param({"MEDASR_ENCRYPT": "true"}, ["MEDASR_JWE_KEY"], id="jwe-key-missing"),
    ],
)
def test_bad_settings_are_one_config_error_line(monkeypatch, variables, names) -> None:
    with pytest.raises(ConfigError) as caught:
        check_environment(monkeypatch, **variables)
    message = str(caught.value)
    assert "\n" not in message
    for name in names:
        assert name in message
    assert "tiny-key" not in message


def test_a_ca_bundle_that_is_not_pem_is_refused(tmp_path: Path) -> None:
    bundle = tmp_path / "ca.pem"
    bundle.write_text("not a certificate\n")
    service = ServiceSettings(ca_bundle=bundle)
    with pytest.raises(ConfigError, match=r"^MEDASR_CA_BUNDLE: cannot load .* as a PEM CA bundle$"):
        check_service_config(service=service, encryption=EncryptionSettings())
    with pytest.raises(ConfigError, match=r"^MEDASR_CA_BUNDLE: .* does not exist"):
        check_service_config(
            service=ServiceSettings(ca_bundle=tmp_path), encryption=EncryptionSettings()
        )


@pytest.mark.parametrize("enabled", [True, False], ids=["on", "off"])
def test_a_key_that_skipped_validation_is_still_refused(enabled: bool) -> None:
    # model_construct skips pydantic's checks, as a hand-built settings object might.
    encryption = EncryptionSettings.model_construct(
        enabled=enabled, jwe_key=SecretStr("tiny-key"), jwe_kid=None
    )
    with pytest.raises(ConfigError, match="MEDASR_JWE_KEY") as caught:
        check_service_config(service=ServiceSettings(), encryption=encryption)
    assert "tiny-key" not in str(caught.value)
    assert isinstance(caught.value.__cause__, Exception)  # translated with `raise ... from`
