"""Control characters in manifest values and transcripts never split an MDM message.

CR and LF end a segment, VT (0x0B) starts and FS (0x1C) ends an MLLP frame: a value
carrying them would forge segments or end the message early. Free text (the author, the
transcript) carries them as HL7 hex escapes (`\\X0D\\`); an identifier (patient id,
encounter, document type) with one is refused, that recording alone (metadata_invalid).
Real parts: python-hl7's MLLP listener parses what arrives and unescapes it.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import SecretStr, ValidationError

from config.settings import DeliverySettings, Settings
from devserver import RunningDevServer
from storage.interface import UnitOfWorkFactory
from tests.service.mllp_listener import running_listener
from tests.tasks.delivery.delivery_helpers import deliver, delivery_settings, make_done

AUTHOR = "Dr. Rao\rOBX|9|TX|||forged\x1c\r\x0bMSH|^~\\&|X\n\x7f\x85end"
TEXT = "first\x0bstill first\x1cand\x00more\ttabbed\nsecond line"


def _settings(server: RunningDevServer, store_url: str, target: str) -> Settings:
    settings = delivery_settings(server, store_url)
    fields = {"target": target, "hl7_ack_timeout_s": 1.0, "fhir_token": SecretStr(server.token)}
    return settings.model_copy(update={"delivery": DeliverySettings(**fields)})


def _rows(store: UnitOfWorkFactory, items: dict[str, Any]) -> dict[str, Any]:
    with store.unit_of_work(read_only=True) as uow:
        return {uri: uow.deliveries.deliveries_of_item(item.id)[-1] for uri, item in items.items()}


def test_free_text_keeps_its_control_characters_as_hex_escapes(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    uri = "/d/a.wav"
    with running_listener() as listener:
        make_done(store, {uri: TEXT}, metadata={uri: {"patient_id": "MRN-1", "author": AUTHOR}})
        target = f"mllp://127.0.0.1:{listener.port}"
        stats = deliver(_settings(devserver_factory(), sqlite_url, target), store)
    assert (stats.delivered, stats.failed, stats.in_doubt) == (1, 0, 0)
    (received,) = listener.received
    names = [str(segment[0]) for segment in received.message]
    assert names == ["MSH", "EVN", "PID", "PV1", "TXA", "OBX", "OBX"]
    txa_9 = received.message.segment("TXA")[9]
    # python-hl7 decodes \Xhh\ byte by byte: U+0085 (UTF-8 C2 85) comes back as two chars.
    assert received.message.unescape(str(txa_9[0][1])) == AUTHOR.replace("\x85", "\xc2\x85")
    assert received.obx_lines() == TEXT.split("\n")
    assert [str(s[1]) for s in received.message.segments("OBX")] == ["1", "2"]  # no OBX|9


def test_an_identifier_with_a_control_character_fails_that_recording_alone(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    metadata = {
        "/d/good.wav": {"patient_id": "MRN-1"},
        "/d/pid.wav": {"patient_id": "MRN-2\rPID|1||MRN-666"},
        "/d/enc.wav": {"patient_id": "MRN-3", "encounter": "ENC-3\x1c\r"},
        "/d/type.wav": {"patient_id": "MRN-4", "doc_type": "DS\n"},
    }
    texts = {uri: f"note of {uri}" for uri in metadata}
    with running_listener() as listener:
        items = make_done(store, texts, metadata=metadata)
        target = f"mllp://127.0.0.1:{listener.port}"
        stats = deliver(_settings(devserver_factory(), sqlite_url, target), store)
    rows = _rows(store, items)
    assert (stats.delivered, stats.failed) == (1, 3)
    assert [r.field("PID", 3) for r in listener.received] == ["MRN-1"]
    for uri, column in (("/d/pid.wav", "patient_id"), ("/d/enc.wav", "encounter")):
        row = rows[uri]
        assert (row.status, row.error_kind, row.retryable) == ("failed", "metadata_invalid", True)
        assert column in (row.error_message or "")
        assert "MRN-666" not in (row.error_message or "")
    assert rows["/d/type.wav"].error_kind == "metadata_invalid"


def test_an_hl7_setting_with_a_control_character_is_a_configuration_error() -> None:
    with pytest.raises(ValidationError, match="control character"):
        DeliverySettings(hl7_sending_facility="WARD\r7")
