"""A misbehaving HTTP peer on a real loopback socket: every request gets one canned answer.

`canned_peer(answer)` (a context manager) reads each request whole (its headers and a
Content-Length body), notes its request line and headers in `requests`, and writes
`answer` (raw bytes: status line, headers, body) on the same connection; an empty
`answer` drops the connection instead, once the request is read.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class CannedPeer:
    """Where the peer listens and what it was sent."""

    answer: bytes
    port: int = 0
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
                line, *header_lines = head.split("\r\n")
                headers = {
                    name.strip().lower(): value.strip()
                    for name, _, value in (h.partition(":") for h in header_lines if h)
                }
                await reader.readexactly(int(headers.get("content-length", "0")))
                self.requests.append((line, headers))
                if not self.answer:  # the whole request read, then the connection dropped
                    writer.transport.abort()
                    return
                writer.write(self.answer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def http_answer(status: str, body: bytes = b"", headers: dict[str, str] | None = None) -> bytes:
    """`HTTP/1.1 {status}` with `headers`, a Content-Length and `body`, as bytes."""
    lines = [f"HTTP/1.1 {status}", f"content-length: {len(body)}"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


@contextmanager
def canned_peer(answer: bytes) -> Iterator[CannedPeer]:
    """A CannedPeer listening on a free loopback port until the block ends."""
    peer = CannedPeer(answer)
    loop = asyncio.new_event_loop()
    listening = threading.Event()
    server: asyncio.Server | None = None

    async def serve() -> None:
        nonlocal server
        server = await asyncio.start_server(peer.handle, "127.0.0.1", 0)
        peer.port = server.sockets[0].getsockname()[1]
        listening.set()
        async with server:
            await server.serve_forever()

    thread = threading.Thread(target=lambda: _run(loop, serve()), daemon=True)
    thread.start()
    listening.wait(timeout=30)
    try:
        yield peer
    finally:
        if server is not None:
            loop.call_soon_threadsafe(server.close)
        thread.join(timeout=30)


def _run(loop: asyncio.AbstractEventLoop, main: object) -> None:
    try:
        loop.run_until_complete(main)  # type: ignore[arg-type]
    except asyncio.CancelledError:
        pass
    finally:
        loop.close()
