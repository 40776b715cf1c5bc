"""The MLLP sender's edges: nothing sent is a plain failure, sent-then-unreachable is in doubt."""

from __future__ import annotations

import asyncio
from collections import deque
from contextlib import ExitStack
from datetime import UTC, datetime

import pytest

from config.settings import DeliverySettings, ServiceSettings, Settings
from service.mllp import MllpUnreachable
from storage.records import ItemRecord
from tasks.delivery.errors import DeliveryInDoubt, MetadataMissing
from tasks.delivery.fhir_documents import Note
from tasks.delivery.senders import MllpSender
from tasks.delivery.targets import Outgoing, parse_target
from tests.service.mllp_listener import MllpListener, running_listener

FAST = ServiceSettings(max_attempts=2, retry_initial_backoff_s=0.01, retry_max_backoff_s=0.02)


def _outgoing(metadata: dict[str, str]) -> Outgoing:
    note = Note(
        source="/d/a.wav",
        language="en-IN",
        status="done",
        text="words",
        content_sha256="ab" * 32,
        version="v1",
        created_at=datetime(2026, 5, 1, tzinfo=UTC),
        document_id="MEDASR-0001",
        recording_id="urn:uuid:00000000-0000-5000-8000-000000000001",
        metadata=metadata,
    )
    item = ItemRecord.__new__(ItemRecord)  # the MLLP sender reads the note only
    return Outgoing(delivery_id=1, item=item, note=note, control_id="STORE0011-0")


def _sender(port: int, *, resends: int = 2) -> MllpSender:
    delivery = DeliverySettings(hl7_ack_timeout_s=0.2, hl7_resends=resends)
    settings = Settings(service=FAST, delivery=delivery)
    return MllpSender(target=parse_target(f"mllp://127.0.0.1:{port}"), settings=settings)


def test_an_engine_that_cannot_be_reached_was_sent_nothing() -> None:
    with running_listener() as listener:
        port = listener.port
    sender = _sender(port)
    with pytest.raises(MllpUnreachable):
        asyncio.run(sender.send(_outgoing({"patient_id": "P1"})))


def test_unanswered_then_unreachable_is_in_doubt() -> None:
    async def run(stack: ExitStack, listener: MllpListener) -> None:
        sender = _sender(listener.port)
        sending = asyncio.create_task(sender.send(_outgoing({"patient_id": "P1"})))
        async with asyncio.timeout(30):  # the listener's first message, or a send that failed
            while not listener.received and not sending.done():
                await asyncio.sleep(0.01)
        stack.close()  # the engine goes away while we wait for the ACK
        try:
            await sending
        finally:
            await sender.aclose()

    with ExitStack() as stack:
        listener = stack.enter_context(running_listener(MllpListener(script=deque(["none"]))))
        with pytest.raises(DeliveryInDoubt, match="unreachable"):
            asyncio.run(run(stack, listener))
    assert len(listener.received) == 1


def test_a_recording_without_patient_id_is_metadata_missing_before_sending() -> None:
    with running_listener() as listener:
        sender = _sender(listener.port)
        with pytest.raises(MetadataMissing, match="patient_id"):
            asyncio.run(sender.send(_outgoing({"encounter": "E1"})))
    assert listener.received == []
