"""Local stand-in of the transcription service (DESIGN.md §8): run it, read its ledger."""

from service.devserver.asgi import create_app
from service.devserver.config import DevServerConfig
from service.devserver.engines import Engine, make_engine
from service.devserver.ledger import Ledger, LedgerEntry
from service.devserver.server import (
    DevServerError,
    RunningDevServer,
    serve_devserver,
    start_devserver,
)
from service.devserver.state import DevServerState, build_state

__all__ = [
    "DevServerConfig",
    "DevServerError",
    "DevServerState",
    "Engine",
    "Ledger",
    "LedgerEntry",
    "RunningDevServer",
    "build_state",
    "create_app",
    "make_engine",
    "serve_devserver",
    "start_devserver",
]
