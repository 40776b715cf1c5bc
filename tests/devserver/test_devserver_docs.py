"""The devserver's POST /mr/api/v2/docs over real sockets with plain httpx."""

from __future__ import annotations

import base64
import hashlib
import json
import uuid

import httpx
import pytest

from service import jwe
from tests.servers import DEVSERVER_JWE_KEY, DEVSERVER_JWE_KID, DEVSERVER_TOKEN

AUTH = {"Authorization": f"Bearer {DEVSERVER_TOKEN}"}
DOC = "नमस्ते: a transcript".encode()


def post(server, **kwargs) -> httpx.Response:
    return httpx.post(f"{server.url}/mr/api/v2/docs", timeout=10, **kwargs)


def docs_lines(server):
    return [e for e in server.ledger.entries() if e.path == "/mr/api/v2/docs"]


def test_a_plain_upload_gets_a_document_id_and_a_ledger_line(devserver_factory) -> None:
    server = devserver_factory()
    response = post(
        server,
        headers=AUTH,
        params={"patient_id": "P-1"},
        files={"file": ("a.txt", DOC, "text/plain; charset=utf-8")},
    )
    assert response.status_code == 200
    assert uuid.UUID(response.json()["document_id"])
    (line,) = docs_lines(server)
    assert line.sha256 == hashlib.sha256(DOC).hexdigest()
    assert (line.bytes, line.filename, line.query, line.encrypted) == (
        len(DOC),
        "a.txt",
        "patient_id=P-1",
        False,
    )


def test_an_encrypted_upload_is_answered_encrypted(devserver_factory) -> None:
    server = devserver_factory(jwe_key=DEVSERVER_JWE_KEY, jwe_kid=DEVSERVER_JWE_KID)
    key = jwe.derive_key(DEVSERVER_JWE_KEY, kid=DEVSERVER_JWE_KID)
    plaintext = json.dumps({"file": base64.b64encode(DOC).decode()}).encode()
    response = post(
        server,
        headers={**AUTH, "X-Encryption": "JWE", "Content-Type": "application/json"},
        content=json.dumps(jwe.encrypt_request(plaintext, key=key)),
    )
    assert response.status_code == 200
    answer = json.loads(jwe.decrypt_response(response.json(), key=key))
    assert set(answer) == {"document_id"}
    (line,) = docs_lines(server)
    assert line.encrypted
    assert line.sha256 == hashlib.sha256(DOC).hexdigest()


@pytest.mark.parametrize(
    ("headers", "status"),
    [({}, 401), ({"Authorization": "Bearer wrong"}, 403)],
    ids=["missing", "wrong"],
)
def test_same_auth_as_transcription(devserver_factory, headers, status) -> None:
    server = devserver_factory()
    response = post(server, headers=headers, files={"file": ("a.txt", DOC, "text/plain")})
    assert response.status_code == status
    assert [line.status for line in docs_lines(server)] == [status]


def test_no_file_is_500_and_too_large_is_413(devserver_factory) -> None:
    server = devserver_factory(max_bytes=1000)
    assert post(server, headers=AUTH, data={"other": "x"}).status_code == 500
    big = {"file": ("a.txt", b"x" * 2000, "text/plain")}
    assert post(server, headers=AUTH, files=big).status_code == 413


def test_same_faults_as_transcription(devserver_factory) -> None:
    server = devserver_factory(fault_script=("429", "503"), retry_after_s=3)
    files = {"file": ("a.txt", DOC, "text/plain")}
    throttled = post(server, headers=AUTH, files=files)
    assert (throttled.status_code, throttled.headers["retry-after"]) == (429, "3")
    assert post(server, headers=AUTH, files=files).status_code == 503
    assert post(server, headers=AUTH, files=files).status_code == 200
    lines = docs_lines(server)
    assert [line.fault for line in lines] == ["429", "503", None]
    assert {line.sha256 for line in lines} == {hashlib.sha256(DOC).hexdigest()}
