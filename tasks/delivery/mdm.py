"""One transcript as an HL7 v2.5.1 MDM message, and the ACK that answers it (hl7apy).

A new transcript is an `MDM^T02` (original document notification and content); a new
version of one already delivered is an `MDM^T10` (document replacement) whose TXA-13
names the replaced document. Every field is set through hl7apy's 2.5.1 model, free
text through its textual datatypes, which write `|^&~` as `\\F\\ \\S\\ \\T\\ \\R\\`;
the escape character itself is written `\\E\\` here first, because hl7apy leaves a
backslash that already looks like an escape sequence alone. The transcript goes in
OBX segments of value type TX, one line of text per OBX, OBX-4 (the sub-ID) numbering
the lines. A line longer than a TX value may be (65,536 characters as sent, escapes
counted) is cut across consecutive OBX that share its sub-ID, so a receiver joins
them back as they came; OBX-1 numbers every OBX.

Control characters would break the message: CR and LF end a segment, VT (0x0B) and FS
(0x1C) frame an MLLP block. In free text (the transcript, the author) each one is sent
as an HL7 hex escape of its UTF-8 bytes (`\\X0D\\`, HL7 v2 chapter 2, "hexadecimal
data"): the words arrive as written. An identifier (patient id, encounter, document
type) holding one is refused instead (MetadataInvalid): no real identifier has a line
break, so it is a damaged manifest, and filing under a guessed identifier could put the
note in the wrong record.

The identifiers (MSH-10, TXA-12, TXA-13) come from tasks/delivery/identity.py: a resend
after an unanswered send carries the same control ID, so an engine can drop the copy.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from hl7apy.base_datatypes import ST, TX
from hl7apy.core import Field, Message, Segment
from hl7apy.exceptions import HL7apyException
from hl7apy.factories import datatype_factory
from hl7apy.parser import parse_segments

from tasks.delivery.errors import DeliveryInDoubt, DocumentInvalid, MetadataInvalid

HL7_VERSION = "2.5.1"
MDM_STRUCTURE = "MDM_T02"  # T02 and T10 share it (HL7 v2.5.1 chapter 9)
_OBX_GROUP = "MDM_T02_OBXNTE_SUPPGRP"
_LINE_BREAKS = re.compile(r"\r\n|\r|\n")
_ACCEPTED = frozenset({"AA", "CA"})
_ERRORED = frozenset({"AE", "CE"})
_REJECTED = frozenset({"AR", "CR"})
_QUOTED_ACK_CHARS = 200
_ESCAPED = re.compile(r"\\([FSTRE])\\")
_PLAIN = {"F": "|", "S": "^", "T": "&", "R": "~", "E": "\\"}
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")  # Unicode's Cc: C0, DEL and C1
_SEPARATORS = frozenset("|^&~\\")  # each sent as a 3-character escape (\F\ ... \E\)
_WIDEST_ESCAPE_CHARS = 7  # a C1 control: \XC285\
OBX_TX_MAX_CHARS = 65_536  # HL7 v2.5.1 TX, the value type of every OBX here
# Manifest columns that name something in the receiver: refused with a control character.
_IDENTIFIERS = (("patient_id", "PID-3"), ("encounter", "PV1-19"), ("doc_type", "TXA-2"))


@dataclass(frozen=True)
class MdmParties:
    """MSH-3..6 and the default document type (settings, not per recording)."""

    sending_application: str
    sending_facility: str
    receiving_application: str
    receiving_facility: str
    doc_type: str
    note_code: str  # LOINC code of OBX-3


@dataclass(frozen=True)
class MdmDocument:
    """What one MDM message says (no store types); the text never reaches a repr."""

    control_id: str  # MSH-10
    document_number: str  # TXA-12
    parent_number: str | None  # TXA-13: set for a replacement (T10)
    patient_id: str  # PID-3
    encounter: str | None  # PV1-19
    doc_type: str | None  # TXA-2 from the manifest; the setting otherwise
    author: str | None  # TXA-9
    activity_time: datetime  # TXA-4 (timezone-aware)
    text: str = field(repr=False)

    @property
    def trigger(self) -> str:
        """T10 for a replacement, T02 for a new document."""
        return "T10" if self.parent_number else "T02"


def build_mdm(document: MdmDocument, parties: MdmParties, *, now: datetime) -> bytes:
    """The ER7 message (segments ended by CR, UTF-8); raises DocumentInvalid."""
    if not document.patient_id.strip():
        raise DocumentInvalid("the manifest gives no patient_id: PID-3 cannot be empty")
    refuse_control_characters(document)
    try:
        message = Message(MDM_STRUCTURE, version=HL7_VERSION)
        _fill_msh(message.msh, document, parties, now=now)
        _fill_evn(message.add_segment("EVN"), document, now=now)
        _fill_pid(message.add_segment("PID"), document)
        _fill_pv1(message.add_segment("PV1"), document)
        _fill_txa(message.add_segment("TXA"), document, parties)
        set_id = 0
        for line_number, line in enumerate(_lines(document.text), start=1):
            for piece in obx_pieces(line, max_chars=OBX_TX_MAX_CHARS):
                set_id += 1
                obx = message.add_group(_OBX_GROUP).add_segment("OBX")
                _fill_obx(obx, set_id=set_id, sub_id=line_number, text=piece, parties=parties)
        return str(message.to_er7()).encode("utf-8")
    except HL7apyException as exc:
        raise DocumentInvalid(
            f"the MDM message could not be built ({type(exc).__name__}); "
            "check the manifest's values for this recording"
        ) from exc


def _fill_msh(msh: Segment, document: MdmDocument, parties: MdmParties, *, now: datetime) -> None:
    _put(msh.msh_3.hd_1, parties.sending_application)
    _put(msh.msh_4.hd_1, parties.sending_facility)
    _put(msh.msh_5.hd_1, parties.receiving_application)
    _put(msh.msh_6.hd_1, parties.receiving_facility)
    msh.msh_7 = hl7_time(now)
    msh.msh_9 = f"MDM^{document.trigger}^{MDM_STRUCTURE}"
    msh.msh_10 = document.control_id
    msh.msh_11 = "P"
    msh.msh_12 = HL7_VERSION
    msh.msh_18 = "UNICODE UTF-8"


def _fill_evn(evn: Segment, document: MdmDocument, *, now: datetime) -> None:
    evn.evn_1 = document.trigger
    evn.evn_2 = hl7_time(now)


def _fill_pid(pid: Segment, document: MdmDocument) -> None:
    pid.pid_1 = "1"
    _put(pid.pid_3.cx_1, document.patient_id)


def _fill_pv1(pv1: Segment, document: MdmDocument) -> None:
    pv1.pv1_1 = "1"
    pv1.pv1_2 = "U"  # patient class unknown: a dictation does not say
    if document.encounter:
        _put(pv1.pv1_19.cx_1, document.encounter)


def _fill_txa(txa: Segment, document: MdmDocument, parties: MdmParties) -> None:
    txa.txa_1 = "1"
    _put(txa.txa_2, document.doc_type or parties.doc_type)
    txa.txa_3 = "TX"
    txa.txa_4 = hl7_time(document.activity_time)
    if document.author:
        txa.txa_9.xcn_2.fn_1.value = _FreeString(escape_backslashes(document.author))
    _put(txa.txa_12.ei_1, document.document_number)
    if document.parent_number:
        _put(txa.txa_13.ei_1, document.parent_number)
    txa.txa_17 = "DO"  # documented: transcribed, not authenticated by a clinician
    txa.txa_19 = "AV"


def _fill_obx(obx: Segment, *, set_id: int, sub_id: int, text: str, parties: MdmParties) -> None:
    obx.obx_1 = str(set_id)
    obx.obx_2 = "TX"
    _put(obx.obx_3.ce_1, parties.note_code)
    obx.obx_3.ce_3 = "LN"
    obx.obx_4 = str(sub_id)
    value = Field("OBX_5", datatype="TX", version=HL7_VERSION)  # OBX-5 varies: say TX
    value.value = _FreeText(escape_backslashes(text))
    obx.add(value)
    obx.obx_11 = "F"


def _put(element: Any, text: str) -> None:
    """Set a leaf to free text through its own datatype, which escapes the separators."""
    element.value = datatype_factory(
        element.datatype, escape_backslashes(text), version=HL7_VERSION
    )


def _lines(text: str) -> list[str]:
    # An MDM needs at least one OBX: an empty transcript is one empty line.
    return _LINE_BREAKS.split(text) or [""]


def obx_pieces(line: str, *, max_chars: int) -> list[str]:
    """`line` cut so that each piece, as sent (escapes included), has at most `max_chars`."""
    if len(line) * _WIDEST_ESCAPE_CHARS <= max_chars:
        return [line]
    pieces: list[str] = []
    start, used = 0, 0
    for index, char in enumerate(line):
        cost = _wire_chars(char)
        if used + cost > max_chars:
            pieces.append(line[start:index])
            start, used = index, 0
        used += cost
    pieces.append(line[start:])
    return pieces


def _wire_chars(char: str) -> int:
    """Characters `char` takes in an escaped TX value: \\F\\, \\X0D\\, \\XC285\\ or itself."""
    if char in _SEPARATORS:
        return 3
    if _CONTROL.match(char):
        return 3 + 2 * len(char.encode("utf-8"))
    return 1


def refuse_control_characters(document: MdmDocument) -> None:
    """Raise MetadataInvalid when an identifier holds a control character (never quoted:
    it may be a patient's identifier)."""
    for column, field_name in _IDENTIFIERS:
        value = getattr(document, column) or ""
        found = _CONTROL.search(value)
        if found:
            raise MetadataInvalid(
                f"the manifest's {column} for this recording holds a control character "
                f"(U+{ord(found.group()):04X} at position {found.start() + 1}) that would split "
                f"the HL7 message ({field_name}); correct the manifest and run again"
            )


def hex_escape_controls(er7: str) -> str:
    """Every control character of `er7` as an HL7 hex escape of its UTF-8 bytes."""
    return _CONTROL.sub(lambda found: f"\\X{found.group().encode('utf-8').hex().upper()}\\", er7)


class _FreeText(TX):  # type: ignore[misc]  # hl7apy is untyped
    """TX that also writes control characters as hex escapes."""

    classname = "TX"  # hl7apy names a value's datatype by its class name

    def to_er7(self, encoding_chars: Any = None) -> str:
        return hex_escape_controls(str(super().to_er7(encoding_chars)))


class _FreeString(ST):  # type: ignore[misc]  # hl7apy is untyped
    """ST that also writes control characters as hex escapes."""

    classname = "ST"

    def to_er7(self, encoding_chars: Any = None) -> str:
        return hex_escape_controls(str(super().to_er7(encoding_chars)))


def escape_backslashes(text: str) -> str:
    """`\\` as `\\E\\` (hl7apy escapes the four separators itself)."""
    return text.replace("\\", "\\E\\")


def hl7_time(moment: datetime) -> str:
    """An HL7 DTM with seconds and UTC offset, e.g. 20260501093000+0000."""
    aware = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return aware.strftime("%Y%m%d%H%M%S%z")


@dataclass(frozen=True)
class Ack:
    """The answer to one message: MSA-1, MSA-2 and the text of MSA-3 / ERR."""

    code: str
    control_id: str
    text: str

    @property
    def accepted(self) -> bool:
        """AA or CA: the engine has the document."""
        return self.code in _ACCEPTED


def parse_ack(reply: bytes, *, control_id: str) -> Ack:
    """The ACK of the message `control_id`; raises DeliveryInDoubt for a garbled reply."""
    try:
        text = _decoded(reply)
        segments = parse_segments(_LINE_BREAKS.sub("\r", text.strip()), version=HL7_VERSION)
        ack = _ack_of(segments)
    except (HL7apyException, LookupError, AttributeError) as exc:
        raise DeliveryInDoubt(
            f"the engine's reply to message {control_id} is not an HL7 ACK "
            f"({len(reply)} bytes); the document may or may not have been filed"
        ) from exc
    if ack.code not in _ACCEPTED | _ERRORED | _REJECTED or ack.control_id != control_id:
        raise DeliveryInDoubt(
            f"the engine's reply to message {control_id} acknowledges "
            f"{ack.control_id[:40]!r} with {ack.code[:4]!r}; the document may or may not "
            "have been filed"
        )
    return ack


def _decoded(reply: bytes) -> str:
    """UTF-8 (what we send, MSH-18), else ISO-8859-1: HL7 v2's usual character set when
    MSH-18 is empty, in which every byte is a character (an ACK is never garbled by it)."""
    try:
        return reply.decode("utf-8")
    except UnicodeDecodeError:
        return reply.decode("iso-8859-1")


def _ack_of(segments: Sequence[Segment]) -> Ack:
    by_name = {segment.name: segment for segment in reversed(segments)}
    msa = by_name["MSA"]
    notes = [msa.msa_3.value or ""]
    err = by_name.get("ERR")
    if err is not None:
        notes += [err.err_8.value or "", err.err_7.value or "", err.err_3.cwe_2.value or ""]
    note = "; ".join(_unescape(n) for n in notes if n)
    return Ack(code=msa.msa_1.value or "", control_id=msa.msa_2.value or "", text=note)


def _unescape(text: str) -> str:
    return _ESCAPED.sub(lambda found: _PLAIN[found.group(1)], text)[:_QUOTED_ACK_CHARS]
