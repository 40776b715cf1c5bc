"""The devserver's gateway and malformed-200 faults, unreadable rates, and its own bugs."""

from __future__ import annotations

import io
import json
import logging

import httpx
import numpy as np
import pytest
import soundfile

from config.errors import ConfigError
from devserver import DevServerConfig
from devserver.config import FAULT_NAMES
from tests.servers import DEVSERVER_TOKEN, make_wav_bytes
from tests.service.tls_certs import make_tls_files

AUTH = {"Authorization": f"Bearer {DEVSERVER_TOKEN}"}


def post(server, wav: bytes) -> httpx.Response:
    files = {"file": ("chunk-0001.wav", wav, "audio/wav")}
    url = f"{server.url}/voice/get-asr"
    return httpx.post(url, params={"language": "en-IN"}, headers=AUTH, files=files, timeout=10)


def wav_at(sample_rate_hz: int, *, frames: int = 400) -> bytes:
    buffer = io.BytesIO()
    samples = np.zeros(frames, dtype=np.int16)
    soundfile.write(buffer, samples, sample_rate_hz, format="WAV", subtype="PCM_16")
    return buffer.getvalue()


# -- the new faults ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fault", "status", "message"),
    [("502", 502, "Bad Gateway"), ("504", 504, "Gateway Timeout")],
)
def test_gateway_faults(devserver_factory, fault: str, status: int, message: str) -> None:
    server = devserver_factory(fault_script=(fault,))
    response = post(server, make_wav_bytes(seconds=0.2))
    assert (response.status_code, response.json()) == (status, {"message": message})
    assert [(e.status, e.fault) for e in server.ledger.entries()] == [(status, fault)]
    assert server.ledger.entries()[0].sha256 is not None  # attempts of a chunk stay linked


def test_badjson_is_a_200_whose_body_is_not_json(devserver_factory) -> None:
    server = devserver_factory(rate_badjson=1.0)
    response = post(server, make_wav_bytes(seconds=0.2))
    assert response.status_code == 200
    with pytest.raises(json.JSONDecodeError):
        json.loads(response.content)


def test_notext_is_a_200_json_object_without_text(devserver_factory) -> None:
    server = devserver_factory(rate_notext=1.0)
    response = post(server, make_wav_bytes(seconds=0.2))
    assert response.status_code == 200
    body = response.json()
    assert isinstance(body, dict)
    assert "text" not in body
    assert body["txn_id"] == server.ledger.entries()[0].txn_id


def test_every_fault_has_a_rate_flag_named_after_it() -> None:
    config = DevServerConfig()
    assert set(config.fault_rates) == set(FAULT_NAMES) - {"ok"}
    for name in config.fault_rates:
        with pytest.raises(ConfigError, match=f"--rate-{name} must be between 0 and 1"):
            DevServerConfig(**{f"rate_{name}": 1.5})
    with pytest.raises(ConfigError, match="add up"):
        DevServerConfig(rate_502=0.6, rate_notext=0.6)


def test_new_rates_are_drawn(devserver_factory) -> None:
    server = devserver_factory(rate_504=0.5, rate_notext=0.5, seed=3)
    statuses = {post(server, make_wav_bytes(seconds=0.1)).status_code for _ in range(12)}
    assert statuses == {200, 504}
    assert {e.fault for e in server.ledger.entries()} == {"504", "notext"}


# -- audio the engines cannot read, and the devserver's own bugs ---------------------------


@pytest.mark.parametrize("sample_rate_hz", [1, 100, 7_999])
def test_very_low_sample_rates_are_unreadable_audio(devserver, sample_rate_hz: int) -> None:
    before = len(devserver.ledger)
    response = post(devserver, wav_at(sample_rate_hz))
    assert response.status_code == 400
    assert f"{sample_rate_hz} Hz" in response.json()["message"]
    assert "8000 Hz" in response.json()["message"]
    assert devserver.ledger.statuses()[before:] == [400]


class _BrokenEngine:
    def transcribe(self, wav: bytes, *, language: str) -> str:
        raise RuntimeError("engine bug with internal detail xyzzy")


def test_an_unexpected_error_is_a_json_500_with_a_ledger_line(devserver_factory, caplog) -> None:
    server = devserver_factory()
    server.state.engine = _BrokenEngine()
    with caplog.at_level(logging.ERROR, logger="devserver.asgi"):
        response = post(server, make_wav_bytes(seconds=0.2))
    assert response.status_code == 500
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {"message": "Internal Server Error"}
    assert "xyzzy" not in response.text
    assert "Traceback" not in response.text
    assert server.ledger.statuses() == [500]
    assert "unexpected RuntimeError" in caplog.text  # the operator still learns about it


# -- TLS options -----------------------------------------------------------------------------


def test_tls_certificate_and_key_go_together(tmp_path) -> None:
    with pytest.raises(ConfigError, match="certificate and its key must be given together"):
        DevServerConfig(tls_cert_path=tmp_path / "server.pem")


def test_unloadable_tls_files_are_a_config_error(devserver_factory, tmp_path) -> None:
    files = make_tls_files(tmp_path)
    files.server_key.write_text("not a key")
    with pytest.raises(ConfigError, match="cannot load the TLS certificate or key"):
        devserver_factory(tls_cert_path=files.server_cert, tls_key_path=files.server_key)
