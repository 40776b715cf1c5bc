"""How much a request may send, enforced before it is read; and no error without headers.

A sign-in form is a name, a password and a token: LOGIN_BODY_MAX_BYTES. Every other form
is at most a transcript of TEXT_MAX_CHARS characters (the editor's cap, shown on the
page and set as the textarea's maxlength) URL-encoded: 12 bytes a character at worst
(a 4-byte UTF-8 character as %XX%XX%XX%XX) and room for the other fields. A declared
Content-Length past the limit answers 413 before a byte of the body is read; a body
streamed past it (chunked) is cut off with 413 at the limit. Forms carry no files.
"""

from __future__ import annotations

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

TEXT_MAX_CHARS = 500_000
LOGIN_BODY_MAX_BYTES = 8 * 1024
FORM_BODY_MAX_BYTES = 12 * TEXT_MAX_CHARS + 64 * 1024
_FORM_MAX_FIELDS = 32


def body_limit_of(path: str) -> int:
    """The most bytes a request to `path` may send."""
    return LOGIN_BODY_MAX_BYTES if path == "/login" else FORM_BODY_MAX_BYTES


async def read_form(request: Request) -> FormData:
    """The request's form (parsed once, then cached by Starlette): fields only, bounded."""
    return await request.form(
        max_files=0, max_fields=_FORM_MAX_FIELDS, max_part_size=body_limit_of(request.url.path)
    )


class _TooLarge(Exception):
    """The body went past its limit while it was read."""


class BodyLimit:
    """ASGI middleware: 413 for a body past its path's limit, before or while it is read."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        limit = body_limit_of(scope["path"])
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > limit:
            await _too_large(send, limit_bytes=limit, close=True)
            return
        seen = 0
        started = False

        async def counted_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise _TooLarge
            return message

        async def watched_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self._app(scope, counted_receive, watched_send)
        except _TooLarge:
            if started:
                raise
            await _too_large(send, limit_bytes=limit, close=True)


async def _too_large(send: Send, *, limit_bytes: int, close: bool) -> None:
    body = f"refused: this request sends more than {limit_bytes:,} bytes\n".encode()
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
    ]
    if close:  # the rest of the body is never read: the connection cannot be reused
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": body})
