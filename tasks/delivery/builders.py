"""What each target is sent, built without sending: the senders send what these build,
and `deliver --dry-run` builds the same to count what a target would refuse.

- docs: the upload (txt, or a FHIR DocumentReference) with its query string;
- MLLP: the MDM message (T02, or T10 for a replacement);
- FHIR: the DocumentReference's JSON body.

Each raises what the real run records on the row: MetadataMissing, MetadataInvalid or
DocumentInvalid. Nothing here opens a connection.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime

from config.settings import Settings
from service.docs_client import Document
from tasks.delivery.documents import DocsQuery, build_document
from tasks.delivery.errors import MetadataMissing
from tasks.delivery.fhir_documents import (
    Note,
    build_document_reference,
    resource_json_bytes,
)
from tasks.delivery.mdm import MdmDocument, MdmParties, build_mdm
from tasks.delivery.targets import Outgoing, Target, TargetKind


def docs_upload(
    outgoing: Outgoing, *, format_name: str, query: DocsQuery, note_code: str
) -> Document:
    """The docs upload of one outgoing transcript."""
    return build_document(
        outgoing.item, outgoing.note, format_name=format_name, query=query, note_code=note_code
    )


def mdm_parties(settings: Settings) -> MdmParties:
    """MSH-3..6, the default TXA-2 and OBX-3 from the settings."""
    delivery = settings.delivery
    return MdmParties(
        sending_application=delivery.hl7_sending_application,
        sending_facility=delivery.hl7_sending_facility,
        receiving_application=delivery.hl7_receiving_application,
        receiving_facility=delivery.hl7_receiving_facility,
        doc_type=delivery.hl7_doc_type,
        note_code=delivery.note_loinc_code,
    )


def mdm_message(
    outgoing: Outgoing, parties: MdmParties, *, now: datetime
) -> tuple[MdmDocument, bytes]:
    """The MDM of one outgoing transcript and its ER7 bytes."""
    document = mdm_document(outgoing)
    return document, build_mdm(document, parties, now=now)


def mdm_document(outgoing: Outgoing) -> MdmDocument:
    """The MDM of one outgoing transcript; raises MetadataMissing without a patient_id."""
    note = outgoing.note
    metadata = note.metadata
    if not metadata.get("patient_id"):
        raise MetadataMissing(
            f"{note.source}: the manifest gives no patient_id for this recording, and an "
            "MDM message needs one (PID-3); add it to the manifest and run again"
        )
    parent = None
    if note.replaces_document_id and note.replaces_document_id != note.document_id:
        parent = note.replaces_document_id
    return MdmDocument(
        control_id=outgoing.control_id,
        document_number=note.document_id,
        parent_number=parent,
        patient_id=metadata["patient_id"],
        encounter=metadata.get("encounter") or None,
        doc_type=metadata.get("doc_type") or None,
        author=metadata.get("author") or None,
        activity_time=note.created_at,
        text=note.text,
    )


def fhir_body(outgoing: Outgoing, *, note_code: str, allow_unlinked: bool) -> tuple[Note, bytes]:
    """The note as sent (`relatesTo` naming the server's id of the replaced version) and
    its DocumentReference's JSON; MetadataMissing without a patient unless filed unlinked."""
    note = outgoing.note
    if not note.metadata.get("patient_id") and not allow_unlinked:
        raise MetadataMissing(
            f"{note.source}: the manifest gives no patient_id for this recording, and a "
            "FHIR DocumentReference needs one (subject); add it to the manifest and run "
            "again, or file it unlinked on purpose with --allow-unlinked"
        )
    if outgoing.replaced_remote_id:
        note = replace(note, replaces_reference=outgoing.replaced_remote_id)
    resource = build_document_reference(note, note_code=note_code)
    return note, resource_json_bytes(resource)


def document_builder(
    target: Target, settings: Settings, *, format_name: str, query: DocsQuery, allow_unlinked: bool
) -> Callable[[Outgoing], bytes]:
    """What `target`'s sender would send for one outgoing transcript, as bytes."""
    note_code = settings.delivery.note_loinc_code
    if target.kind is TargetKind.MLLP:
        parties = mdm_parties(settings)
        return lambda outgoing: mdm_message(outgoing, parties, now=datetime.now(UTC))[1]
    if target.kind is TargetKind.FHIR:
        return lambda outgoing: fhir_body(
            outgoing, note_code=note_code, allow_unlinked=allow_unlinked
        )[1]
    return lambda outgoing: (
        docs_upload(outgoing, format_name=format_name, query=query, note_code=note_code).content
    )
