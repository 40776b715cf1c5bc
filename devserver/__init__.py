"""Local stand-in of the transcription service (DESIGN.md §8): run it, read its ledger."""

from devserver.asgi import create_app
from devserver.config import DevServerConfig
from devserver.engines import Engine, make_engine
from devserver.ledger import Ledger, LedgerEntry
from devserver.server import (
    DevServerError,
    RunningDevServer,
    serve_devserver,
    start_devserver,
)
from devserver.state import DevServerState, build_state

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
