"""`medasr web`'s application served on a free loopback port in a thread, for tests.

The store is a real SQLite file; recordings are real audio files made by the tests.
"""

from __future__ import annotations

import asyncio
import re
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np
import soundfile
import uvicorn
from imageio_ffmpeg import get_ffmpeg_exe

from config.workstation import WebSettings
from storage.review_interface import ReviewStore
from tests.helpers.review import PASSWORD
from web.app import build_app
from web.command import server_config

_START_TIMEOUT_S = 10.0
_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


@dataclass(frozen=True)
class Served:
    url: str
    store: ReviewStore


@contextmanager
def serve(store: ReviewStore, *, web: WebSettings | None = None) -> Iterator[Served]:
    """The workstation over `store` on 127.0.0.1:<free port> until the block ends."""
    app = build_app(store, web=web or WebSettings(), tls=False)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    config = server_config(
        app, host="127.0.0.1", port=0, tls_files=(None, None), log_config=None,
        lifespan="off", http="h11", loop="asyncio", timeout_graceful_shutdown=1,
    )  # fmt: skip
    server = _ClosingServer(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + _START_TIMEOUT_S
    try:
        while not server.started:  # uvicorn offers no event to wait on
            assert thread.is_alive(), "the workstation's server thread died"
            assert time.monotonic() < deadline, "the workstation did not start"
            time.sleep(0.005)
        host, port = sock.getsockname()[:2]
        yield Served(url=f"http://{host}:{port}", store=store)
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


class _ClosingServer(uvicorn.Server):
    """uvicorn's server that closes, at its shutdown, the connections still open.

    Past its graceful timeout uvicorn cancels a request's task but leaves its socket open
    when its loop ends; collected during a later test, it fails that test with a
    ResourceWarning (warnings are errors here)."""

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        await super().shutdown(sockets=sockets)
        for connection in list(self.server_state.connections):
            connection.transport.close()
        await asyncio.sleep(0)  # the transports' close callbacks run on this loop


def csrf_of(page: str) -> str:
    """The CSRF token a page carries in its forms."""
    found = _CSRF.search(page)
    assert found is not None, "no CSRF token on the page"
    return found.group(1)


def sign_in(client: httpx.Client, name: str, password: str = PASSWORD) -> httpx.Response:
    """Fill and send the sign-in form like a browser (its token from the form and cookie)."""
    form = client.get("/login")
    token = csrf_of(form.text)
    return client.post("/login", data={"name": name, "password": password, "csrf_token": token})


def write_tone_wav(path: Path, *, seconds: float, rate_hz: int = 16_000) -> Path:
    """A recording whose pitch rises with time: any stretch's frequency says where it is."""
    t = np.arange(int(seconds * rate_hz)) / rate_hz
    frequency = 200 + 20 * t  # Hz
    phase = 2 * np.pi * np.cumsum(frequency) / rate_hz
    soundfile.write(path, 0.3 * np.sin(phase), rate_hz, subtype="PCM_16")
    return path


def write_mp3(path: Path, *, seconds: float) -> Path:
    """An mp3 of a sine sweep, made by the bundled ffmpeg."""
    subprocess.run(
        [get_ffmpeg_exe(), "-nostdin", "-loglevel", "error", "-f", "lavfi", "-i",
         f"sine=frequency=440:duration={seconds}", "-ac", "1", "-b:a", "32k", "-y", str(path)],
        check=True,
    )  # fmt: skip
    return path
