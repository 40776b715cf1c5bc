"""Responses that misbehave on purpose: dropped connections, slow bodies, altered envelopes."""

from __future__ import annotations

import asyncio
import base64
import email.utils
import math
import time

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

_SLOW_PIECES = 4


class DroppedResponse(Response):
    """Sends headers promising a body, then returns: uvicorn closes the connection mid-reply."""

    def __init__(self) -> None:
        super().__init__(b"", status_code=200, media_type="application/json")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = [(b"content-type", b"application/json"), (b"content-length", b"64")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})


class SlowResponse(Response):
    """A body sent in pieces spread over `slow_s` seconds (the first one late too)."""

    def __init__(
        self,
        content: bytes,
        *,
        slow_s: float,
        status_code: int = 200,
        media_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(content, status_code=status_code, media_type=media_type, headers=headers)
        self._slow_s = slow_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        start = {"type": "http.response.start", "status": self.status_code}
        await send({**start, "headers": self.raw_headers})
        body = bytes(self.body)
        size = max(1, math.ceil(len(body) / _SLOW_PIECES))
        pieces = [body[i : i + size] for i in range(0, len(body), size)] or [b""]
        for index, piece in enumerate(pieces):
            await asyncio.sleep(self._slow_s / len(pieces))
            more = index < len(pieces) - 1
            await send({"type": "http.response.body", "body": piece, "more_body": more})


class EndlessResponse(Response):
    """A JSON-looking body that never ends, sent until the client goes away.

    What a broken or hostile server does to a client that reads answers whole; the
    server holds one chunk, never the body.
    """

    _CHUNK = b"a" * 65_536

    def __init__(self, *, status_code: int = 200, media_type: str = "application/json") -> None:
        super().__init__(b"", status_code=status_code, media_type=media_type)
        self._content_type = media_type.encode("ascii")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = [(b"content-type", self._content_type)]  # no length: chunked
        await send({"type": "http.response.start", "status": self.status_code, "headers": headers})
        gone = asyncio.Event()
        watcher = asyncio.create_task(_wait_for_disconnect(receive, gone))
        try:
            head = b'{"resourceType":"DocumentReference","id":"endless","pad":"'
            await send({"type": "http.response.body", "body": head, "more_body": True})
            while not gone.is_set():
                await send({"type": "http.response.body", "body": self._CHUNK, "more_body": True})
                await asyncio.sleep(0)  # let the disconnect be seen
        except OSError:  # the client hung up mid-send
            pass
        finally:
            watcher.cancel()


async def _wait_for_disconnect(receive: Receive, gone: asyncio.Event) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    gone.set()


def retry_after_value(retry_after_s: int, *, http_date: bool) -> str:
    """A Retry-After header value: delay seconds, or an HTTP-date no earlier than that."""
    if not http_date:
        return str(retry_after_s)
    return email.utils.formatdate(math.ceil(time.time() + retry_after_s), usegmt=True)


def tamper_envelope(envelope: dict[str, str]) -> dict[str, str]:
    """The same envelope with one bit of the ciphertext flipped (tests expect a tag failure)."""
    text = envelope["ciphertext"]
    data = bytearray(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    data[0] ^= 0x01
    flipped = base64.urlsafe_b64encode(bytes(data)).rstrip(b"=").decode("ascii")
    return {**envelope, "ciphertext": flipped}
