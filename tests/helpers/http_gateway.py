"""A loopback HTTP server answering every POST as scripted: a receiver that misbehaves.

Real sockets for what the devserver does not say: an API gateway in front of a FHIR
server (`{"message": ...}`, not FHIR), a redirect elsewhere, a body JSON parsers choke on.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Gateway:
    """One scripted status, headers and body for every POST; the paths asked, in order."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    paths: list[str] = field(default_factory=list)
    url: str = ""


@contextmanager
def gateway(script: Gateway) -> Iterator[Gateway]:
    """Serve `script` on 127.0.0.1 (a free port, `script.url`) until the block ends."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            script.paths.append(self.path)
            self.send_response(script.status)
            for name, value in {**script.headers, "Content-Length": str(len(script.body))}.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(script.body)

        def log_message(self, *args: object) -> None:
            pass  # the test reads the script, not stderr

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    script.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield script
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
