"""An MLLP client: one connection, one message at a time, framed `0x0B ... 0x1C 0x0D`.

MLLP (HL7 v2's minimal lower layer protocol) is not pipelined: a sender writes one
block and waits for the one block that answers it. A connection is opened on first
use and again after a failure, with full-jitter backoff; `mllps://` wraps it in TLS
checked against the system CAs or MEDASR_CA_BUNDLE, as for the service.

Two failures differ and are told apart: nothing could be sent (`MllpUnreachable`:
safe to try later) and a block was sent but no complete answer came back in time
(`MllpNoAnswer`: the receiver may have it). After a missing answer the connection is
closed, so a late ACK can never be read as the answer to the next message.
"""

from __future__ import annotations

import asyncio
import logging
import random
import ssl
from dataclasses import dataclass
from pathlib import Path

from config.errors import TransientError
from service.status import tls_verify

logger = logging.getLogger(__name__)

START_BLOCK = b"\x0b"
END_BLOCK = b"\x1c\x0d"
_MAX_REPLY_BYTES = 1_000_000


class MllpUnreachable(TransientError):
    """No connection to the engine could be made: nothing was sent."""

    kind = "mllp_unreachable"


class MllpNoAnswer(TransientError):
    """A message was sent and no complete answer came back: the engine may have it."""

    kind = "mllp_no_answer"


@dataclass(frozen=True)
class MllpEndpoint:
    """Where the engine listens."""

    host: str
    port: int
    tls: bool = False


@dataclass(frozen=True)
class MllpTimings:
    """Timeouts and reconnect backoff, seconds."""

    ack_timeout_s: float = 30.0
    connect_timeout_s: float = 10.0
    connect_attempts: int = 5
    backoff_initial_s: float = 0.5
    backoff_max_s: float = 30.0


class MllpClient:
    """One MLLP connection used by one deliverer; `exchange` sends a block, returns the answer."""

    def __init__(
        self,
        endpoint: MllpEndpoint,
        *,
        timings: MllpTimings,
        ca_bundle: Path | None = None,
    ) -> None:
        """Raises ConfigError for an unusable CA bundle (mllps:// only)."""
        self._endpoint = endpoint
        self._timings = timings
        self._tls = _tls_context(ca_bundle) if endpoint.tls else None
        self._lock = asyncio.Lock()  # MLLP is not pipelined: one message on the wire at a time
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self.connections = 0  # opened so far (tests and the bench read it)

    async def exchange(self, block: bytes) -> bytes:
        """Send one message and return the answer's content (frame removed).

        Raises MllpUnreachable (no connection: nothing sent) or MllpNoAnswer (sent; no
        complete answer within ack_timeout_s, the connection dropped, or a bad frame).
        """
        async with self._lock:
            reader, writer = await self._connected()
            try:
                writer.write(START_BLOCK + block + END_BLOCK)
                async with asyncio.timeout(self._timings.ack_timeout_s):
                    await writer.drain()
                    return await _read_block(reader)
            except (
                TimeoutError,
                OSError,
                asyncio.IncompleteReadError,
                asyncio.LimitOverrunError,
                ValueError,
            ) as exc:
                await self._close()
                raise MllpNoAnswer(_no_answer_message(exc, self._timings.ack_timeout_s)) from exc

    async def aclose(self) -> None:
        """Close the connection, if one is open."""
        async with self._lock:
            await self._close()

    async def _connected(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self._reader is not None and self._writer is not None:
            if not self._writer.is_closing() and not self._reader.at_eof():
                return self._reader, self._writer
            await self._close()
        timings = self._timings
        for attempt in range(1, timings.connect_attempts + 1):
            try:
                async with asyncio.timeout(timings.connect_timeout_s):
                    self._reader, self._writer = await asyncio.open_connection(
                        self._endpoint.host,
                        self._endpoint.port,
                        ssl=self._tls,
                        limit=_MAX_REPLY_BYTES,  # an ACK quoting what it refuses passes 64 KiB
                    )
                self.connections += 1
                return self._reader, self._writer
            except ssl.SSLCertVerificationError as exc:
                raise MllpUnreachable(
                    f"the engine's TLS certificate at {self._endpoint.host} did not verify; "
                    "set MEDASR_CA_BUNDLE to the CA that signed it"
                ) from exc
            except (TimeoutError, OSError) as exc:
                if attempt == timings.connect_attempts:
                    raise MllpUnreachable(
                        f"could not connect to the engine at {self._endpoint.host}:"
                        f"{self._endpoint.port} after {attempt} attempt(s) ({type(exc).__name__})"
                    ) from exc
                await asyncio.sleep(self._backoff_s(attempt))
        raise MllpUnreachable("no connection attempt was made")  # connect_attempts >= 1

    def _backoff_s(self, attempt: int) -> float:
        ceiling = min(self._timings.backoff_max_s, self._timings.backoff_initial_s * 2**attempt)
        return random.uniform(0, ceiling)

    async def _close(self) -> None:
        writer, self._reader, self._writer = self._writer, None, None
        if writer is None:
            return
        writer.close()
        try:
            # A close waits for the buffer to drain: an engine that reads nothing never does.
            async with asyncio.timeout(self._timings.connect_timeout_s):
                await writer.wait_closed()
        except TimeoutError:
            writer.transport.abort()  # what it never read is dropped with the connection
        except (OSError, ssl.SSLError):  # reset by the peer: closed anyway
            pass


async def _read_block(reader: asyncio.StreamReader) -> bytes:
    """One framed answer; raises IncompleteReadError (EOF) or ValueError (bad frame)."""
    data = await reader.readuntil(END_BLOCK)
    start = data.find(START_BLOCK)
    if start < 0 or len(data) > _MAX_REPLY_BYTES:
        raise ValueError("the answer is not an MLLP block")
    if data[:start].strip():
        raise ValueError("bytes outside an MLLP block")
    return data[start + 1 : -len(END_BLOCK)]


def _no_answer_message(exc: BaseException, ack_timeout_s: float) -> str:
    if isinstance(exc, TimeoutError):
        return f"no ACK within {ack_timeout_s:g} s; the engine may have filed the document"
    if isinstance(exc, ValueError):
        return "the engine's answer is not an MLLP block; the engine may have filed the document"
    return (
        f"the connection closed before an ACK came ({type(exc).__name__}); "
        "the engine may have filed the document"
    )


def _tls_context(ca_bundle: Path | None) -> ssl.SSLContext:
    verify = tls_verify(ca_bundle)
    return verify if isinstance(verify, ssl.SSLContext) else ssl.create_default_context()
