"""A real MLLP listener on loopback for tests and the bench: python-hl7's asyncio server.

It is a peer implementation (another library than the hl7apy that builds our messages):
every message is parsed with python-hl7, recorded, and answered as scripted: `AA`, `AE`,
`AR`, `none` (filed, no answer: the ACK is lost), `drop` (filed, connection closed
without an answer), `garble` (filed, a reply that is not an ACK) or `late` (filed, its
AA sent `late_s` seconds later on the same connection); `silent` answers nothing at
all. Like an interface engine, it files a message control ID (MSH-10) once: a resend
of one already filed is acknowledged again and not filed twice, and counted as a
duplicate.
"""

from __future__ import annotations

import asyncio
import random
import ssl
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import hl7
from hl7.mllp import start_hl7_server

ANSWERS = ("AA", "AE", "AR", "none", "drop", "garble", "late")
_FILING = ("AA", "none", "drop", "garble", "late")  # the engine has the document, answered or not
# An engine takes long documents (asyncio's default buffer limit is 64 KiB).
_MAX_MESSAGE_BYTES = 16 * 1024 * 1024


@dataclass
class Received:
    """One parsed message and what the listener did with it."""

    message: hl7.Message
    control_id: str
    answer: str

    def field(self, segment: str, index: int) -> str:
        """One field, unescaped (e.g. field("TXA", 12))."""
        return str(self.message.unescape(str(self.message.segment(segment)[index])))

    def obx_lines(self) -> list[str]:
        """OBX-5 of every OBX, unescaped, in order."""
        return [str(self.message.unescape(str(s[5]))) for s in self.message.segments("OBX")]

    def text(self) -> str:
        """The document's text as a receiver reassembles it: consecutive OBX with the same
        OBX-4 (sub-ID) are one line cut for length, joined as they came; lines by LF."""
        lines: list[tuple[str, str]] = []  # (sub-ID, text so far)
        for segment in self.message.segments("OBX"):
            sub_id, value = str(segment[4]), str(self.message.unescape(str(segment[5])))
            if lines and lines[-1][0] == sub_id:
                lines[-1] = (sub_id, lines[-1][1] + value)
            else:
                lines.append((sub_id, value))
        return "\n".join(value for _, value in lines)


@dataclass
class MllpListener:
    """What the listener received and filed; `script` and `rates` decide each answer."""

    script: deque[str] = field(default_factory=deque)
    by_patient: dict[str, deque[str]] = field(default_factory=dict)  # PID-3 -> answers
    rates: dict[str, float] = field(default_factory=dict)
    silent: bool = False  # file every message, answer none (a resend of a filed one too)
    late_s: float = 1.0  # how long a "late" AA waits
    note: str = ""  # MSA-3 of an AE/AR, as an engine words it (else "scripted AR for <PID-3>")
    ack_encoding: str = "utf-8"  # an engine without MSH-18 often answers in ISO-8859-1
    seed: int = 7
    received: list[Received] = field(default_factory=list)
    filed: dict[str, Received] = field(default_factory=dict)  # by MSH-10
    duplicates: int = 0
    connections: int = 0
    port: int = 0
    raw: list[bytes] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)
        self._lock = threading.Lock()

    def next_answer(self, control_id: str, *, patient_id: str = "") -> str:
        """The answer scripted for the patient, else the next scripted, else one drawn
        from `rates`; a filed ID gets AA again."""
        with self._lock:
            if self.silent:
                return "none"
            if self.by_patient.get(patient_id):
                return self.by_patient[patient_id].popleft()
            if self.script:
                return self.script.popleft()
            if control_id in self.filed:
                return "AA"
            roll = self._rng.random()
        for name, rate in self.rates.items():
            if roll < rate:
                return name
            roll -= rate
        return "AA"

    def record(self, message: hl7.Message, control_id: str, answer: str) -> None:
        """Keep what was parsed; file it once per control ID when the engine would have it."""
        entry = Received(message=message, control_id=control_id, answer=answer)
        with self._lock:
            self.received.append(entry)
            if answer in _FILING:
                if control_id in self.filed:
                    self.duplicates += 1
                else:
                    self.filed[control_id] = entry

    def documents_filed(self) -> dict[str, int]:
        """Filed messages per TXA-12 (unique document number): 1 each when nothing doubled."""
        counts: dict[str, int] = {}
        for entry in self.filed.values():
            number = entry.field("TXA", 12)
            counts[number] = counts.get(number, 0) + 1
        return counts


def _has(message: hl7.Message, name: str) -> bool:
    return any(str(segment[0]) == name for segment in message)


async def _serve(listener: MllpListener, reader: object, writer: object) -> None:
    listener.connections += 1
    try:
        while True:
            try:
                message = await reader.readmessage()  # type: ignore[attr-defined]
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            control_id = str(message.segment("MSH")[10])
            listener.raw.append(str(message).encode("utf-8"))
            patient_id = str(message.segment("PID")[3]) if _has(message, "PID") else ""
            answer = listener.next_answer(control_id, patient_id=patient_id)
            listener.record(message, control_id, answer)
            if answer == "none":
                continue  # the ACK is lost; the sender times out and closes
            if answer == "drop":
                writer.close()  # type: ignore[attr-defined]
                return
            if answer == "late":
                await asyncio.sleep(listener.late_s)  # the sender has given up by now
                answer = "AA"
            try:
                note = listener.note or f"scripted {answer} for {patient_id}"
                await _answer(message, answer, writer, note=note, encoding=listener.ack_encoding)
            except ConnectionError:  # the sender closed first (a late answer)
                return
    finally:
        writer.close()  # type: ignore[attr-defined]


async def _answer(
    message: hl7.Message, answer: str, writer: object, *, note: str, encoding: str
) -> None:
    if answer == "garble":
        writer.writeblock(b"this is not an ACK")  # type: ignore[attr-defined]
    else:
        ack = message.create_ack(ack_code=answer, application="EHR", facility="HOSP")
        if answer != "AA":  # as engines do, the text names the patient
            ack.segment("MSA").append(note)
        writer.writeblock(str(ack).encode(encoding))  # type: ignore[attr-defined]
    await writer.drain()  # type: ignore[attr-defined]


@contextmanager
def running_listener(
    listener: MllpListener | None = None, *, tls: ssl.SSLContext | None = None
) -> Iterator[MllpListener]:
    """Serve `listener` on 127.0.0.1 (a free port) in a thread until the block ends."""
    listener = listener or MllpListener()
    loop = asyncio.new_event_loop()
    started = threading.Event()
    server_box: list[asyncio.Server] = []

    async def start() -> None:
        # UTF-8, as MSH-18 (UNICODE UTF-8) says; python-hl7 reads ASCII unless told.
        server = await start_hl7_server(
            lambda r, w: _serve(listener, r, w),
            host="127.0.0.1",
            port=0,
            ssl=tls,
            encoding="utf-8",
            limit=_MAX_MESSAGE_BYTES,
        )
        listener.port = server.sockets[0].getsockname()[1]
        server_box.append(server)
        started.set()

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(start())
        loop.run_forever()

    thread = threading.Thread(target=run, name="mllp-listener", daemon=True)
    thread.start()
    if not started.wait(10):
        raise RuntimeError("the MLLP listener did not start")
    try:
        yield listener
    finally:

        async def stop() -> None:
            server_box[0].close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        asyncio.run_coroutine_threadsafe(stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
