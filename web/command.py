"""`medasr web [--host 127.0.0.1] [--port 8770]`: serve the review workstation until stopped.

Any host other than loopback needs TLS (MEDASR_WEB__TLS_CERT and MEDASR_WEB__TLS_KEY,
a key that matches its certificate and that no other user can read):
patient data does not cross a network in clear text unless MEDASR_ALLOW_INSECURE_HTTP=true
says so on purpose. A refusal is one line and exit code 2, before anything listens.
Uvicorn's access log stays off: a URL can hold a recording's path.
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
import uvicorn
from starlette.types import ASGIApp

from config.errors import ConfigError, MedasrError, error_line, exit_code_for
from config.listening import listening_socket
from config.settings import Settings, load_settings
from storage import open_review_store
from tasks.audio.ffmpeg_binary import find_ffmpeg
from tasks.discovery.recording_names import one_line
from web.app import build_app

_LOOPBACK_NAMES = {"localhost", "localhost.localdomain"}


def web_command(
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="Port.")] = 8770,
) -> None:
    """Serve the review workstation: read, hear and correct transcripts in a browser.

    Accounts: `medasr reviewers add NAME --password-stdin`. Settings: MEDASR_WEB__IDLE_TIMEOUT_S
    (900: a session ends after that many idle seconds), MEDASR_WEB__LOCKOUT_S (900: the lock
    after 5 wrong passwords), MEDASR_WEB__TLS_CERT and MEDASR_WEB__TLS_KEY (needed for a
    --host other than loopback, unless MEDASR_ALLOW_INSECURE_HTTP=true), and
    MEDASR_REVIEW__REQUIRED=flagged|all (which new transcripts wait for a person).
    """
    with _ended_on_error():
        settings = load_settings()
        tls = check_transport(settings, host=host)
        find_ffmpeg()  # the player decodes every recording with it; FfmpegMissing if none
        # Bound before "serving" is said: a port taken is a ConfigError, not uvicorn's exit 3.
        sock = listening_socket(host=host, port=port, who="web", backlog=2048)
    with sock:
        _serve(settings, sock, tls=tls, host=host, port=port)


def _serve(settings: Settings, sock: socket.socket, *, tls: bool, host: str, port: int) -> None:
    """Open the store and serve on the bound socket until stopped."""
    with _ended_on_error():
        store = open_review_store(settings.storage)
    web = settings.web
    app = build_app(store, web=web, tls=tls, review=settings.review)
    scheme = "https" if tls else "http"
    typer.echo(f"medasr web: serving the review workstation on {scheme}://{host}:{port}/")
    config = server_config(app, host=host, port=port, tls_files=(web.tls_cert, web.tls_key))
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        store.dispose()


@contextmanager
def _ended_on_error() -> Iterator[None]:
    """A medasr error ends the command on its one line and exit code."""
    try:
        yield
    except MedasrError as exc:
        typer.echo(one_line(error_line(exc)), err=True)
        raise typer.Exit(exit_code_for(exc)) from None


def server_config(
    app: ASGIApp,
    *,
    host: str,
    port: int,
    tls_files: tuple[Path | None, Path | None],
    **options: Any,
) -> uvicorn.Config:
    """How uvicorn serves the workstation (the tests serve it the same way).

    No proxy headers: uvicorn would otherwise take a client's address from the
    X-Forwarded-For any client on loopback can write, and the sign-in throttle counts by
    address. Behind a reverse proxy every client is the proxy's address; the throttle per
    account name and the lockout still hold. No access log (a URL can hold a recording's
    path), no Server header. `options`: more of uvicorn.Config's (the tests' loop, log)."""
    cert, key = tls_files
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        ssl_certfile=None if cert is None else str(cert),
        ssl_keyfile=None if key is None else str(key),
        proxy_headers=False,
        access_log=False,
        server_header=False,
        log_level="warning",
        **options,
    )


def check_transport(settings: Settings, *, host: str) -> bool:
    """True when TLS is configured; raises ConfigError for plain HTTP off loopback."""
    web = settings.web
    if (web.tls_cert is None) != (web.tls_key is None):
        raise ConfigError("MEDASR_WEB__TLS_CERT and MEDASR_WEB__TLS_KEY go together; set both")
    for path in (web.tls_cert, web.tls_key):
        if path is not None and not path.is_file():
            raise ConfigError(f"TLS file not found: {path}")
    if web.tls_cert is not None and web.tls_key is not None:
        check_tls_pair(web.tls_cert, web.tls_key)
    tls = web.tls_cert is not None
    if not tls and not is_loopback(host) and not settings.service.allow_insecure_http:
        raise ConfigError(
            f"--host {host} is not loopback: set MEDASR_WEB__TLS_CERT and MEDASR_WEB__TLS_KEY "
            "(or MEDASR_ALLOW_INSECURE_HTTP=true to serve patient data unencrypted on purpose)"
        )
    return tls


def check_tls_pair(cert: Path, key: Path) -> None:
    """The key is private to its owner and the certificate's own; raises ConfigError.
    A key group members may read (Debian's ssl-cert group) is allowed with a warning."""
    mode = stat.S_IMODE(key.stat().st_mode)
    if mode & 0o007:
        raise ConfigError(
            f"TLS key {key} is readable by others (mode {mode:04o}): anyone on this host "
            f"could impersonate the workstation; chmod 600 {key}"
        )
    if mode & 0o070:
        typer.echo(
            f"medasr web: warning: TLS key {key} is readable by its group (mode {mode:04o})",
            err=True,
        )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(certfile=str(cert), keyfile=str(key))
    except PermissionError:
        raise ConfigError(f"TLS key {key} or certificate {cert} cannot be read") from None
    except ssl.SSLError as exc:
        if "KEY_VALUES_MISMATCH" in str(exc):
            raise ConfigError(f"TLS key {key} does not match the certificate {cert}") from None
        raise ConfigError(
            f"TLS certificate {cert} or key {key} is not a PEM certificate and its key"
        ) from None


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 or localhost."""
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
