"""The devserver's ASGI app: the service contract (docs/service-contract.md) with faults.

Each route lives in its own module, built on routes_common.py; `ROUTE_MODULES` is the
one place a route module registers (each lists its starlette routes in `ROUTES`).
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute

from devserver import asr_route, docs_route, fhir_route, received_route
from devserver.config import DevServerConfig
from devserver.routes_common import message
from devserver.state import DevServerState, build_state
from service.contract import MESSAGE_NO_FILE

# Every route module of the devserver; a new endpoint is one module and one entry here.
ROUTE_MODULES = (asr_route, docs_route, fhir_route, received_route)


def all_routes() -> list[BaseRoute]:
    """The routes of every registered module, in registration order."""
    return [route for module in ROUTE_MODULES for route in module.ROUTES]


async def _http_error(request: Request, exc: Exception) -> Response:
    if isinstance(exc, HTTPException):
        return message(exc.status_code, str(exc.detail))
    return message(500, MESSAGE_NO_FILE)


def create_app(config: DevServerConfig, *, state: DevServerState | None = None) -> Starlette:
    """The Starlette app serving every registered route; raises ConfigError."""
    app = Starlette(routes=all_routes(), exception_handlers={HTTPException: _http_error})
    app.state.devserver = state if state is not None else build_state(config)
    return app
