"""ServiceSession under more than the two built-in clients: what a third endpoint plugs in.

A third thin client (a FHIR server, say) brings its own URL, token, body type and
status table; the session supplies transport, JWE, retries and the cap unchanged.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from config.errors import MedasrError
from service import jwe
from service.answers import json_object_of
from service.client import TranscriptionClient
from service.contract import DOCS_PATH
from service.docs_client import DocsClient, Document
from service.endpoint import Endpoint, RawBody
from service.errors import (
    CredentialsRejected,
    InsecureTransport,
    PayloadTooLarge,
    RequestRejected,
)
from service.http_client import ServiceSession
from service.retrying import RetryEvent, RetryPolicy
from tests.servers import DEVSERVER_JWE_KEY, client_settings, make_wav_bytes

POLICY = RetryPolicy(
    request_timeout_s=10.0,
    max_attempts=3,
    total_s=20.0,
    initial_backoff_s=0.01,
    max_backoff_s=0.05,
)


def _fields(response: httpx.Response) -> dict[str, Any]:
    return json_object_of(response, key=None, answered="the receiver accepted the note")


def _conflict_is_final(response: httpx.Response, *, sent_bytes: int, token: str) -> MedasrError:
    """A receiver whose 503 means "never again" (a pluggable status table)."""
    return RequestRejected(f"the receiver refused the note (HTTP {response.status_code})")


def test_two_clients_share_one_session_and_keep_their_own_retry_hooks(devserver_factory) -> None:
    server = devserver_factory(fault_script=("503", "ok", "503", "ok"), retry_after_s=0)
    service, encryption = client_settings(server)
    heard: dict[str, list[RetryEvent]] = {"transcribe": [], "docs": []}

    async def call() -> tuple[str, dict[str, Any]]:
        async with ServiceSession.of(service) as session:
            async with (
                TranscriptionClient(
                    service, encryption, session=session, on_retry=heard["transcribe"].append
                ) as asr,
                DocsClient(
                    service, encryption, session=session, on_retry=heard["docs"].append
                ) as docs,
            ):
                text = (await asr.transcribe(make_wav_bytes(seconds=0.2), language="ta")).text
                note = Document(content=text.encode(), filename="a.txt", content_type="text/plain")
                receipt = await docs.upload(note)
            # Closing the clients left the shared pool open: it still sends.
            again = await DocsClient(service, encryption, session=session).upload(note)
            return text, receipt.fields | {"again": again.fields["document_id"]}

    text, fields = asyncio.run(call())
    assert text
    assert fields["document_id"] != fields["again"]
    assert server.ledger.statuses() == [503, 200, 503, 200, 200]
    assert [e.status for e in heard["transcribe"]] == [503]
    assert [e.status for e in heard["docs"]] == [503]


def test_a_raw_body_is_sealed_like_a_file_when_the_endpoint_has_a_key(devserver_factory) -> None:
    server = devserver_factory(jwe_key=DEVSERVER_JWE_KEY)
    key = jwe.derive_key(DEVSERVER_JWE_KEY)
    endpoint = Endpoint(url=server.url + DOCS_PATH, token=SecretStr(server.token), key=key)
    # The plaintext of a sealed body is the JSON the endpoint would otherwise get.
    body = RawBody(jwe.file_upload_plaintext(b"note text"), "application/json")

    async def call() -> dict[str, Any]:
        async with ServiceSession(POLICY) as session:
            reply = await session.post(
                endpoint, body, read=lambda r: json_object_of(r, key=key, answered="accepted")
            )
            return reply.value

    assert "document_id" in asyncio.run(call())
    [entry] = server.ledger.entries()
    assert (entry.status, entry.encrypted, entry.bytes) == (200, True, len(b"note text"))


def test_an_endpoint_brings_its_own_status_table(devserver_factory) -> None:
    server = devserver_factory(fault_script=("503", "ok"))
    endpoint = Endpoint(
        url=server.url + DOCS_PATH,
        token=SecretStr(server.token),
        translate=_conflict_is_final,
        label="receiver",
    )
    note = RawBody(b"{}", "application/fhir+json")

    async def call() -> None:
        async with ServiceSession(POLICY) as session:
            await session.post(endpoint, note, read=_fields)

    with pytest.raises(RequestRejected, match="the receiver refused the note"):
        asyncio.run(call())
    assert server.ledger.statuses() == [503]  # terminal by this table: not retried


def test_the_wire_shape_of_a_raw_body_with_extra_headers() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(201, json={"id": "doc-1"})

    endpoint = Endpoint(
        url="https://fhir.example/r4/DocumentReference",
        token=SecretStr("fhir-token"),
        token_setting="MEDASR_FHIR_TOKEN",
    )
    body = RawBody(
        json.dumps({"resourceType": "DocumentReference"}).encode(), "application/fhir+json"
    )

    async def call() -> dict[str, Any]:
        transport = httpx.MockTransport(handler)
        http = httpx.AsyncClient(transport=transport)
        async with http, ServiceSession(POLICY, http=http) as session:
            headers = [("If-None-Exist", "identifier=urn:x|1")]
            reply = await session.post(endpoint, body, read=_fields, headers=headers)
            return reply.value

    assert asyncio.run(call()) == {"id": "doc-1"}
    [request] = seen
    assert request.headers["Content-Type"] == "application/fhir+json"
    assert request.headers["Authorization"] == "Bearer fhir-token"
    assert request.headers["If-None-Exist"] == "identifier=urn:x|1"
    assert json.loads(request.content) == {"resourceType": "DocumentReference"}


def test_an_endpoint_names_its_own_settings_in_refusals() -> None:
    with pytest.raises(InsecureTransport, match="MEDASR_FHIR_URL"):
        Endpoint(url="http://192.0.2.7/fhir", token=None, url_setting="MEDASR_FHIR_URL")
    endpoint = Endpoint(
        url="https://fhir.example/r4/DocumentReference",
        token=None,
        token_setting="MEDASR_FHIR_TOKEN",
        max_body_bytes=10,
        cap_setting="MEDASR_FHIR_MAX_BYTES",
    )

    async def call(ep: Endpoint) -> None:
        async with ServiceSession(POLICY) as session:
            await session.post(ep, RawBody(b"x" * 64, "application/fhir+json"), read=_fields)

    with pytest.raises(CredentialsRejected, match="set MEDASR_FHIR_TOKEN"):
        asyncio.run(call(endpoint))
    with_token = dataclasses.replace(endpoint, token=SecretStr("t"))
    with pytest.raises(PayloadTooLarge, match=r"upload cap of 10 bytes \(MEDASR_FHIR_MAX_BYTES\)"):
        asyncio.run(call(with_token))
