"""GET /received: the documents the docs endpoint accepted, with their metadata and text.

For a person trying `medasr deliver` against the stand-in (the README's walkthrough).
It shows transcripts, so it answers a loopback client only (403 otherwise), needs no
token (the browser of the person at the machine reads it) and is never cached.
"""

from __future__ import annotations

import ipaddress

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from devserver.state import DevServerState

RECEIVED_PATH = "/received"
_NO_STORE = {"cache-control": "no-store"}


async def received_endpoint(request: Request) -> Response:
    """Every kept document, oldest first: `{"documents": [...]}`."""
    if not _loopback(request.client.host if request.client else None):
        return PlainTextResponse(
            "refused: /received answers a loopback client only", status_code=403
        )
    state: DevServerState = request.app.state.devserver
    return JSONResponse({"documents": state.received.as_json()}, headers=_NO_STORE)


def _loopback(host: str | None) -> bool:
    try:
        address = ipaddress.ip_address(host or "")
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return bool((mapped or address).is_loopback)


ROUTES = (Route(RECEIVED_PATH, received_endpoint, methods=["GET"]),)
