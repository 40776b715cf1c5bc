"""The devserver shows what its docs endpoint received: GET /received, loopback only."""

from __future__ import annotations

import asyncio

import httpx

from devserver.asgi import create_app
from devserver.config import DevServerConfig
from tests.servers import DEVSERVER_TOKEN

AUTH = {"Authorization": f"Bearer {DEVSERVER_TOKEN}"}
DOC = "नमस्ते: metformin 500 mg twice daily".encode()


def test_a_filed_document_is_shown_with_its_metadata_and_text(devserver_factory) -> None:
    server = devserver_factory()
    filed = httpx.post(
        f"{server.url}/mr/api/v2/docs",
        headers=AUTH,
        params={"patient_id": "P-1", "title": "ward round"},
        files={"file": ("a.txt", DOC, "text/plain; charset=utf-8")},
        timeout=10,
    )
    assert filed.status_code == 200
    shown = httpx.get(f"{server.url}/received", timeout=10)
    assert shown.status_code == 200
    assert shown.headers["cache-control"] == "no-store"
    (document,) = shown.json()["documents"]
    assert document["document_id"] == filed.json()["document_id"]
    assert document["filename"] == "a.txt"
    assert document["query"] == {"patient_id": "P-1", "title": "ward round"}
    assert document["text"] == DOC.decode()
    assert document["bytes"] == len(DOC)
    assert document["received_at"].endswith("Z")


def test_a_refused_upload_is_not_shown(devserver_factory) -> None:
    server = devserver_factory()
    refused = httpx.post(
        f"{server.url}/mr/api/v2/docs", files={"file": ("a.txt", DOC)}, timeout=10
    )  # no token
    assert refused.status_code == 401
    assert httpx.get(f"{server.url}/received", timeout=10).json()["documents"] == []


def test_only_a_loopback_client_may_read_what_was_received() -> None:
    # A socket here is always loopback: the far address is given to Starlette's client.
    app = create_app(DevServerConfig(port=0, token=DEVSERVER_TOKEN))
    transport = httpx.ASGITransport(app=app, client=("203.0.113.9", 50000))

    async def read() -> httpx.Response:
        async with httpx.AsyncClient(transport=transport, base_url="http://devserver") as far:
            return await far.get("/received")

    answer = asyncio.run(read())
    assert answer.status_code == 403
    assert "loopback" in answer.text
