"""Running the devserver: uvicorn on a socket we bind first (port 0 allowed), in a thread."""

from __future__ import annotations

import dataclasses
import socket
import ssl
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

import uvicorn
from threadpoolctl import threadpool_limits

from config.errors import ConfigError, TerminalError
from config.listening import listening_socket
from devserver.asgi import create_app
from devserver.config import DevServerConfig
from devserver.ledger import Ledger
from devserver.state import DevServerState, build_state

_START_TIMEOUT_S = 10.0


class DevServerError(TerminalError):
    """The devserver could not be started or stopped."""

    kind = "devserver"


def bind_socket(*, host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port (0 = any free port); raises ConfigError."""
    return listening_socket(host=host, port=port, who="devserver", backlog=128)


def url_of(sock: socket.socket, *, tls: bool = False) -> str:
    """http(s)://host:port of a bound socket (IPv6 hosts in brackets)."""
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"{'https' if tls else 'http'}://{shown}:{port}"


def _uvicorn_server(state: DevServerState) -> uvicorn.Server:
    """A uvicorn server for `state`, loaded here so a bad TLS file is a ConfigError."""
    app = create_app(state.config, state=state)
    config = uvicorn.Config(
        app,
        log_config=None,
        log_level="warning",
        access_log=False,
        lifespan="off",
        http="h11",
        loop="asyncio",
        timeout_graceful_shutdown=1,
        ssl_certfile=state.config.tls_cert_path,
        ssl_keyfile=state.config.tls_key_path,
    )
    try:
        config.load()  # serve() would load it too, but in the thread, where errors get lost
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"devserver: cannot load the TLS certificate or key ({exc})") from exc
    return uvicorn.Server(config)


def _uses_tls(config: DevServerConfig) -> bool:
    return config.tls_cert_path is not None


class RunningDevServer:
    """A devserver serving in a background thread; a context manager that stops it."""

    def __init__(self, *, state: DevServerState, sock: socket.socket) -> None:
        self._state = state
        self._sock = sock
        self.url = url_of(sock, tls=_uses_tls(state.config))
        self._server = _uvicorn_server(state)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name="medasr-devserver"
        )
        self._thread.daemon = True

    @property
    def config(self) -> DevServerConfig:
        """The options it runs with."""
        return self._state.config

    @property
    def ledger(self) -> Ledger:
        """Every request it has seen."""
        return self._state.ledger

    @property
    def token(self) -> str:
        """The token it accepts (static, or minted at start)."""
        return self._state.tokens.token

    @property
    def state(self) -> DevServerState:
        """Its state (ledger, token authority, fault injector, engine)."""
        return self._state

    def start(self) -> None:
        """Start serving; raises DevServerError when uvicorn does not come up in 10 s."""
        self._thread.start()
        deadline = time.monotonic() + _START_TIMEOUT_S
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise DevServerError(f"the devserver at {self.url} did not start")
            time.sleep(0.005)

    def stop(self, *, timeout_s: float = 5.0) -> None:
        """Stop serving and wait for the thread (forcing it after timeout_s)."""
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout_s)
        if self._thread.is_alive():
            self._server.force_exit = True
            self._thread.join(timeout_s)
        self._sock.close()

    def __enter__(self) -> RunningDevServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


def start_devserver(config: DevServerConfig | None = None, **overrides: Any) -> RunningDevServer:
    """Start a devserver in a thread (overrides replace config fields); raises ConfigError."""
    config = dataclasses.replace(config or DevServerConfig(), **overrides)
    state = build_state(config)
    sock = bind_socket(host=config.host, port=config.port)
    try:
        server = RunningDevServer(state=state, sock=sock)
    except ConfigError:
        sock.close()
        raise
    server.start()
    return server


def keep_blas_in_callers_thread() -> None:
    """One BLAS thread in this process: each request's engine already runs in a thread of
    its own (Starlette's pool), and OpenBLAS's workers spin between the tone decoder's
    small products. In a capacity-3 night run on 2 cores they took 44 of the devserver's
    53 s of CPU, from the client beside it. Process-wide, so only for the foreground
    server: a devserver started in a thread leaves its host process's BLAS alone."""
    threadpool_limits(limits=1, user_api="blas")


def serve_devserver(
    config: DevServerConfig, *, on_ready: Callable[[str, DevServerState], None]
) -> None:
    """Serve in the foreground until interrupted; on_ready(url, state) runs once it listens."""
    keep_blas_in_callers_thread()
    state = build_state(config)
    sock = bind_socket(host=config.host, port=config.port)
    try:
        server = _uvicorn_server(state)
        on_ready(url_of(sock, tls=_uses_tls(config)), state)
        server.run(sockets=[sock])
    finally:
        sock.close()
