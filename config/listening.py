"""A TCP socket bound and listening before a server says it serves: a port taken, a host
that does not resolve or an address not ours is a ConfigError naming the server (exit 2),
not the server library's own bind error and exit code (uvicorn's 3 is medasr's code for
rejected credentials). Shared by `medasr web` and the devserver; plain `socket` calls.
"""

from __future__ import annotations

import socket

from config.errors import ConfigError


def listening_socket(*, host: str, port: int, who: str, backlog: int) -> socket.socket:
    """A socket listening on host:port (0: any free port); raises ConfigError that names
    `who` ("web", "devserver")."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise ConfigError(f"{who}: cannot resolve --host {host!r} ({exc})") from exc
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(backlog)
    except OSError as exc:
        sock.close()
        reason = exc.strerror or str(exc)
        raise ConfigError(f"{who}: cannot listen on {host}:{port} ({reason})") from exc
    return sock
