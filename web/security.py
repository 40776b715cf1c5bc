"""What every answer of the workstation carries, and the tokens behind a session.

OWASP's session management and CSRF cheat sheets: a random id of 256 bits in an
HttpOnly, SameSite=Strict cookie (Secure under TLS), kept in the store only as its
sha256; a synchronizer token per session compared in constant time; PHI never cached
(no-store), never framed, no inline script (the CSP allows scripts from this origin only).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import MutableMapping
from typing import Any

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

SESSION_COOKIE = "medasr_session"
LOGIN_COOKIE = "medasr_login"  # the sign-in form's own token, before any session
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "x-csrf-token"

CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "media-src 'self'",
        "connect-src 'self'",
        "form-action 'self'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    )
)
SECURITY_HEADERS = {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "cache-control": "no-store",
    "pragma": "no-cache",
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "cross-origin-opener-policy": "same-origin",
}


def new_token() -> str:
    """A random token of 256 bits, URL-safe."""
    return secrets.token_urlsafe(32)


def token_digest(token: str) -> str:
    """What the store keeps of a session id: its sha256, hex."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def same_token(given: str | None, expected: str) -> bool:
    """A constant-time comparison of a submitted token with the expected one."""
    return bool(given) and hmac.compare_digest(str(given).encode(), expected.encode())


def cookie_options(*, tls: bool, path: str = "/") -> dict[str, Any]:
    """HttpOnly, SameSite=Strict, Secure under TLS; a session cookie (no expiry)."""
    return {"httponly": True, "samesite": "strict", "secure": tls, "path": path}


class SecurityHeaders:
    """ASGI middleware: the security headers on every answer, static files included."""

    def __init__(self, app: ASGIApp, *, tls: bool) -> None:
        self._app = app
        self._headers = dict(SECURITY_HEADERS)
        if tls:
            self._headers["strict-transport-security"] = "max-age=31536000"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return

        started = False

        async def send_with_headers(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = MutableHeaders(scope=_as_mutable(message))
                for name, value in self._headers.items():
                    headers[name] = value
            await send(message)

        try:
            await self._app(scope, receive, send_with_headers)
        except Exception:
            # Starlette's own 500 is sent outside every middleware, without these headers:
            # answer first, then let the error reach the server's log.
            if not started:
                await send_with_headers(_server_error_start())
                await send_with_headers({"type": "http.response.body", "body": _SERVER_ERROR_TEXT})
            raise


_SERVER_ERROR_TEXT = b"the workstation failed to answer this request; it is in the server's log\n"


def _server_error_start() -> Message:
    return {
        "type": "http.response.start",
        "status": 500,
        "headers": [
            (b"content-type", b"text/plain; charset=utf-8"),
            (b"content-length", str(len(_SERVER_ERROR_TEXT)).encode()),
        ],
    }


def _as_mutable(message: Message) -> MutableMapping[str, Any]:
    message.setdefault("headers", [])
    return message
