"""MDM^T02 / MDM^T10 built with hl7apy, read back with python-hl7 (a peer parser); ACKs."""

from __future__ import annotations

from datetime import UTC, datetime

import hl7
import pytest

from tasks.delivery.errors import DeliveryInDoubt, DocumentInvalid
from tasks.delivery.identity import NoteKey, message_control_id, txa_12
from tasks.delivery.mdm import MdmDocument, MdmParties, build_mdm, parse_ack

PARTIES = MdmParties(
    sending_application="MEDASR",
    sending_facility="DICT",
    receiving_application="EHR",
    receiving_facility="HOSP",
    doc_type="TN",
    note_code="11506-3",
)
NOW = datetime(2026, 5, 1, 9, 30, tzinfo=UTC)
TRICKY = "pipe | hat ^ amp & tilde ~ back \\ literal \\F\\ end"


def _document(**overrides: object) -> MdmDocument:
    fields: dict[str, object] = {
        "control_id": message_control_id(store_id="STORE001", delivery_id=7, series=0),
        "document_number": txa_12(NoteKey("STORE001", 1, "en-IN", "v2")),
        "parent_number": None,
        "patient_id": "MRN|0042",
        "encounter": "ENC-9",
        "doc_type": None,
        "author": "Dr. Rao^Asha",
        "activity_time": datetime(2026, 4, 30, 18, 5, 6, tzinfo=UTC),
        "text": f"first line\n{TRICKY}\r\n\nlast line",
    }
    fields.update(overrides)
    return MdmDocument(**fields)  # type: ignore[arg-type]


def _parsed(document: MdmDocument) -> hl7.Message:
    return hl7.parse(build_mdm(document, PARTIES, now=NOW).decode("utf-8"))


def _field(message: hl7.Message, segment: str, index: int) -> str:
    found = message.segment(segment)
    return str(message.unescape(str(found[index]))) if index < len(found) else ""


def test_a_new_transcript_is_an_mdm_t02_with_every_segment_of_the_contract() -> None:
    document = _document()
    message = _parsed(document)
    assert [str(s[0]) for s in message] == ["MSH", "EVN", "PID", "PV1", "TXA"] + ["OBX"] * 4
    assert str(message.segment("MSH")[9]) == "MDM^T02^MDM_T02"
    assert str(message.segment("MSH")[10]) == document.control_id
    assert str(message.segment("MSH")[12]) == "2.5.1"
    assert [str(message.segment("MSH")[i]) for i in (3, 4, 5, 6)] == [
        "MEDASR",
        "DICT",
        "EHR",
        "HOSP",
    ]
    assert str(message.segment("EVN")[1]) == "T02"
    assert _field(message, "PID", 3) == "MRN|0042"
    assert str(message.segment("PV1")[19]) == "ENC-9"
    assert str(message.segment("TXA")[2]) == "TN"  # the setting: the manifest gave none
    assert str(message.segment("TXA")[3]) == "TX"
    assert str(message.segment("TXA")[4]) == "20260430180506+0000"
    assert message.unescape(str(message.segment("TXA")[9][0][1])) == "Dr. Rao^Asha"
    assert str(message.segment("TXA")[12]) == document.document_number
    assert str(message.segment("TXA")[13]) == ""
    assert str(message.segment("TXA")[17]) == "DO"
    assert str(message.segment("TXA")[19]) == "AV"


def test_each_line_is_one_obx_of_type_tx_and_every_separator_is_escaped() -> None:
    message = _parsed(_document())
    obx = message.segments("OBX")
    assert [str(s[2]) for s in obx] == ["TX"] * 4
    assert [str(s[1]) for s in obx] == ["1", "2", "3", "4"]
    assert [message.unescape(str(s[5])) for s in obx] == ["first line", TRICKY, "", "last line"]
    raw = str(obx[1][5])
    assert raw == "pipe \\F\\ hat \\S\\ amp \\T\\ tilde \\R\\ back \\E\\ literal \\E\\F\\E\\ end"


def test_a_new_version_is_an_mdm_t10_naming_its_parent_in_txa_13() -> None:
    parent = txa_12(NoteKey("STORE001", 1, "en-IN", "v1"))
    message = _parsed(_document(parent_number=parent, doc_type="DS", encounter=None))
    assert str(message.segment("MSH")[9]) == "MDM^T10^MDM_T02"
    assert str(message.segment("EVN")[1]) == "T10"
    assert str(message.segment("TXA")[13]) == parent
    assert str(message.segment("TXA")[2]) == "DS"  # the manifest's doc_type wins
    assert _field(message, "PV1", 19) == ""


def test_a_recording_without_a_patient_id_is_not_sent() -> None:
    with pytest.raises(DocumentInvalid, match="patient_id"):
        build_mdm(_document(patient_id=" "), PARTIES, now=NOW)


def _ack(code: str, control_id: str, text: str = "", err: str = "") -> bytes:
    lines = [
        "MSH|^~\\&|EHR|HOSP|MEDASR|DICT|20260501||ACK^T02^ACK|A1|P|2.5.1",
        f"MSA|{code}|{control_id}|{text}",
    ]
    if err:
        lines.append(f"ERR||||E|||{err}")
    return "\r".join(lines).encode()


@pytest.mark.parametrize("code", ["AA", "CA", "AE", "CE", "AR", "CR"])
def test_an_ack_is_read_with_its_code_and_msa_2(code: str) -> None:
    ack = parse_ack(_ack(code, "C1", "no \\F\\ bed", err="diag"), control_id="C1")
    assert (ack.code, ack.control_id) == (code, "C1")
    assert ack.accepted is (code in ("AA", "CA"))
    assert ack.text == "no | bed; diag"


@pytest.mark.parametrize(
    "reply",
    [b"this is not an ACK", b"\xff\xfe", _ack("AA", "OTHER"), _ack("ZZ", "C1"), b"MSH|^~\\&|"],
)
def test_a_garbled_reply_leaves_the_message_in_doubt(reply: bytes) -> None:
    with pytest.raises(DeliveryInDoubt):
        parse_ack(reply, control_id="C1")
