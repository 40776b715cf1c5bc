"""The devserver over real sockets, spoken to with plain httpx: statuses, bodies, ledger, faults."""

from __future__ import annotations

import base64
import json
import os
import stat
import time

import httpx
import pytest

from config.errors import ConfigError
from devserver import DevServerConfig, start_devserver
from devserver.faults import FaultInjector
from service import jwe
from tests.servers import DEVSERVER_JWE_KEY, DEVSERVER_TOKEN, make_tone_wav_bytes, make_wav_bytes

WAV = make_wav_bytes(seconds=0.25)
AUTH = {"Authorization": f"Bearer {DEVSERVER_TOKEN}"}


def post(server, *, language: str | None = "en-IN", headers=None, **kwargs) -> httpx.Response:
    params = {} if language is None else {"language": language}
    url = f"{server.url}/voice/get-asr"
    return httpx.post(url, params=params, headers=headers, timeout=10, **kwargs)


def upload(wav: bytes = WAV, name: str = "chunk-0001.wav") -> dict:
    return {"file": (name, wav, "audio/wav")}


# -- the contract --------------------------------------------------------------------------


def test_200_body_shape(devserver) -> None:
    response = post(devserver, headers=AUTH, files=upload())
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body) == {"text", "txn_id", "audio_duration"}
    assert body["audio_duration"] == 0.25
    assert body["text"]


@pytest.mark.parametrize(
    ("headers", "status", "message"),
    [
        ({}, 401, "Unauthorized"),
        ({"Authorization": "Bearer wrong"}, 403, "Forbidden"),
        ({"Authorization": "Bearer"}, 403, "Forbidden"),
        ({"Authorization": f"Basic {DEVSERVER_TOKEN}"}, 403, "Forbidden"),
        ({"Authorization": DEVSERVER_TOKEN}, 403, "Forbidden"),
    ],
    ids=["missing", "wrong", "empty-bearer", "basic-scheme", "no-scheme"],
)
def test_auth_errors_exactly_as_the_spec(devserver, headers, status, message) -> None:
    response = post(devserver, headers=headers, files=upload())
    assert (response.status_code, response.json()) == (status, {"message": message})


def test_minted_tokens_expire_and_cannot_be_forged(devserver_factory) -> None:
    server = devserver_factory(token=None)
    tokens = server.state.tokens
    assert post(
        server, headers={"Authorization": f"Bearer {server.token}"}, files=upload()
    ).is_success
    expired = tokens.mint(ttl_s=60, now_s=time.time() - 120)
    header, payload, signature = server.token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=="))
    claims["exp"] += 10**6
    forged_payload = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    for bad in (expired, f"{header}.{forged_payload}.{signature}", "a.b.c", DEVSERVER_TOKEN):
        response = post(server, headers={"Authorization": f"Bearer {bad}"}, files=upload())
        assert response.status_code == 403, bad


def test_413_on_declared_length_and_on_a_chunked_body(devserver_factory) -> None:
    server = devserver_factory(max_bytes=10_000)
    big = make_wav_bytes(seconds=1.0)
    declared = post(server, headers=AUTH, files=upload(big))
    assert (declared.status_code, declared.json()) == (413, {"message": "Request Entity Too Large"})

    def chunks():  # no Content-Length: the server must count what it reads
        for start in range(0, len(big), 4096):
            yield big[start : start + 4096]

    chunked = post(server, headers=AUTH | {"Content-Type": "audio/wav"}, content=chunks())
    assert chunked.status_code == 413
    assert server.ledger.statuses() == [413, 413]


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"files": {"audio": ("a.wav", WAV, "audio/wav")}},
        {"data": {"file": "not a file part"}},
        {"json": {"file": "x"}},
    ],
    ids=["no-body", "other-field", "file-as-text-field", "json-body"],
)
def test_500_when_no_file_is_passed(devserver, kwargs) -> None:
    response = post(devserver, headers=AUTH, **kwargs)
    assert (response.status_code, response.json()) == (500, {"message": "Internal Server Error"})


@pytest.mark.parametrize("language", ["fr", "EN-IN", "", None], ids=repr)
def test_400_for_an_unsupported_or_missing_language(devserver, language) -> None:
    response = post(devserver, language=language, headers=AUTH, files=upload())
    assert response.status_code == 400
    assert "language" in response.json()["message"]


def test_400_for_audio_that_is_not_a_wav(devserver, tmp_path) -> None:
    import soundfile

    flac = tmp_path / "a.flac"
    soundfile.write(flac, [0.0] * 1600, 16_000, format="FLAC")
    for payload, reason in ((b"ID3\x03\x00 mp3-ish", "not a WAV"), (flac.read_bytes(), "FLAC")):
        response = post(devserver, headers=AUTH, files=upload(payload))
        assert response.status_code == 400
        assert reason in response.json()["message"]


def test_400_for_a_malformed_multipart_body(devserver) -> None:
    headers = AUTH | {"Content-Type": "multipart/form-data"}  # no boundary
    response = post(devserver, headers=headers, content=b"--x\r\n\r\n")
    assert response.status_code == 400
    assert "multipart" in response.json()["message"]


def test_other_paths_and_methods_answer_json(devserver) -> None:
    assert httpx.get(f"{devserver.url}/voice/get-asr").json() == {"message": "Method Not Allowed"}
    assert httpx.post(f"{devserver.url}/nowhere").status_code == 404


# -- encryption ----------------------------------------------------------------------------


def _encrypted_post(server, plaintext: bytes, *, key_string: str = DEVSERVER_JWE_KEY):
    key = jwe.derive_key(key_string, kid="k1")
    body = json.dumps(jwe.encrypt_request(plaintext, key=key))
    headers = AUTH | {"X-Encryption": "JWE", "Content-Type": "application/json"}
    return post(server, headers=headers, content=body), key


@pytest.mark.parametrize("legacy", [False, True], ids=["16-byte-tag", "32-byte-tag"])
def test_encrypted_request_and_response(devserver_factory, legacy: bool) -> None:
    server = devserver_factory(jwe_key=DEVSERVER_JWE_KEY, legacy_response_tag=legacy)
    wav = make_tone_wav_bytes("ok")
    response, key = _encrypted_post(server, jwe.file_upload_plaintext(wav))
    envelope = response.json()
    assert response.status_code == 200
    assert set(envelope) == {"ciphertext", "iv", "tag"}
    tag_bytes = len(base64.urlsafe_b64decode(envelope["tag"] + "=="))
    assert tag_bytes == (32 if legacy else 16)
    assert json.loads(jwe.decrypt_response(envelope, key=key))["text"] == "ok"
    assert server.ledger.entries()[0].encrypted


@pytest.mark.parametrize(
    ("server_key", "plaintext", "client_key", "status"),
    [
        (DEVSERVER_JWE_KEY, b'{"file": "not base64!"}', DEVSERVER_JWE_KEY, 400),
        (DEVSERVER_JWE_KEY, b'{"audio": "AAAA"}', DEVSERVER_JWE_KEY, 500),
        (DEVSERVER_JWE_KEY, b"not json", DEVSERVER_JWE_KEY, 400),
        (DEVSERVER_JWE_KEY, b'{"file": "AAAA"}', "fedcba9876543210", 400),
        (None, b'{"file": "AAAA"}', DEVSERVER_JWE_KEY, 400),
    ],
    ids=["bad-base64", "no-file", "not-json", "wrong-key", "server-without-key"],
)
def test_bad_encrypted_requests(devserver_factory, server_key, plaintext, client_key, status):
    server = devserver_factory(jwe_key=server_key)
    response, _ = _encrypted_post(server, plaintext, key_string=client_key)
    assert response.status_code == status
    assert server_key is None or server_key not in response.text


# -- faults, ledger ----------------------------------------------------------------------


def test_fault_draws_are_seeded_and_follow_the_rates() -> None:
    config = DevServerConfig(rate_429=0.3, rate_503=0.2, seed=7)
    one, two = FaultInjector(config), FaultInjector(config)
    sequence = [one.draw() for _ in range(2000)]
    assert sequence == [two.draw() for _ in range(2000)]
    assert 500 < sequence.count("429") < 700
    assert 320 < sequence.count("503") < 480
    assert sequence.count("ok") == 2000 - sequence.count("429") - sequence.count("503")
    other = FaultInjector(DevServerConfig(rate_429=0.3, rate_503=0.2, seed=8))
    assert [other.draw() for _ in range(2000)] != sequence


def test_fault_script_comes_first(devserver_factory) -> None:
    server = devserver_factory(fault_script=("503", "429", "500"), retry_after_s=4)
    statuses = [post(server, headers=AUTH, files=upload()).status_code for _ in range(4)]
    assert statuses == [503, 429, 500, 200]
    assert [e.fault for e in server.ledger.entries()] == ["503", "429", "500", None]
    assert server.ledger.entries()[1].retry_after_s == 4.0


def test_429_carries_retry_after(devserver_factory) -> None:
    server = devserver_factory(rate_429=1.0, retry_after_s=7)
    response = post(server, headers=AUTH, files=upload())
    assert (response.status_code, response.headers["Retry-After"]) == (429, "7")


def test_reset_drops_the_connection(devserver_factory) -> None:
    server = devserver_factory(rate_reset=1.0)
    # Headers then EOF, or a TCP RST when request bytes were still unread: both are resets.
    with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
        post(server, headers=AUTH, files=upload())
    assert server.ledger.statuses() == [0]


def test_latency_and_slow_bodies(devserver_factory) -> None:
    server = devserver_factory(latency_ms=200, rate_slow=1.0, slow_s=0.4)
    started = time.perf_counter()
    response = post(server, headers=AUTH, files=upload())
    assert response.status_code == 200
    assert response.json()["text"]
    assert time.perf_counter() - started >= 0.6


def test_ledger_file_has_one_json_line_per_request(devserver_factory, tmp_path) -> None:
    path = tmp_path / "ledger.jsonl"
    server = devserver_factory(ledger_path=path)
    post(server, headers=AUTH, files=upload(make_tone_wav_bytes("secret")))
    post(server, headers={}, files=upload())
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["status"] for line in lines] == [200, 401]
    assert set(lines[0]) >= {"time", "status", "language", "sha256", "bytes", "encrypted"}
    assert lines[0]["sha256"] == server.ledger.entries()[0].sha256
    assert "secret" not in path.read_text()
    assert DEVSERVER_TOKEN not in path.read_text()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


# -- configuration -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        ({"rate_429": 1.5}, "--rate-429"),
        ({"rate_500": 0.6, "rate_503": 0.6}, "add up"),
        ({"port": 70_000}, "--port"),
        ({"engine": "whisper"}, "--engine"),
        ({"fault_script": ("429", "boom")}, "--fault-script"),
        ({"max_bytes": 0}, "--max-bytes"),
        ({"token": ""}, "--token"),
    ],
    ids=["rate", "rates-sum", "port", "engine", "script", "max-bytes", "empty-token"],
)
def test_bad_options_are_config_errors(overrides, match) -> None:
    with pytest.raises(ConfigError, match=match):
        DevServerConfig(**overrides)


def test_busy_port_is_a_config_error(devserver) -> None:
    port = int(devserver.url.rsplit(":", 1)[1])
    with pytest.raises(ConfigError, match=f"cannot listen on 127.0.0.1:{port}"):
        start_devserver(DevServerConfig(port=port))
