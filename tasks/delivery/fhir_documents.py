"""A transcript as a FHIR R4 DocumentReference, and many as a Bundle (fhir.resources R4B).

The resources are built with fhir.resources' models, so each one is validated as it is
made; a manifest value FHIR refuses (a `date` that is not a date) becomes
DocumentInvalid for that recording. The identifiers come from tasks/delivery/identity.py:
`identifier` names the recording in this store, `masterIdentifier` one version of its
note, so a receiver deduplicates a resend and never mistakes one patient's copy of a
dictation for another's.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from fhir.resources.R4B.attachment import Attachment
from fhir.resources.R4B.bundle import Bundle, BundleEntry
from fhir.resources.R4B.codeableconcept import CodeableConcept
from fhir.resources.R4B.coding import Coding
from fhir.resources.R4B.documentreference import (
    DocumentReference,
    DocumentReferenceContent,
    DocumentReferenceContext,
    DocumentReferenceRelatesTo,
)
from fhir.resources.R4B.identifier import Identifier
from fhir.resources.R4B.reference import Reference
from pydantic import ValidationError

from tasks.delivery.errors import DocumentInvalid

FHIR_MEDIA_TYPE = "application/fhir+json"
TEXT_CONTENT_TYPE = "text/plain; charset=utf-8"
LOINC_SYSTEM = "http://loinc.org"
URI_SYSTEM = "urn:ietf:rfc:3986"  # the identifier's value is itself a URI (urn:uuid:...)
DEFAULT_NOTE_CODE = "11506-3"
_NOTE_DISPLAYS = {
    "11506-3": "Progress note",
    "11488-4": "Consult note",
    "18842-5": "Discharge summary",
}


@dataclass(frozen=True)
class Note:
    """What a DocumentReference says about one transcript (no store types)."""

    source: str
    language: str
    status: str  # the item's status: done, or needs_review (preliminary)
    text: str
    content_sha256: str
    version: str  # storage.deliveries.transcript_version
    created_at: datetime  # when the transcript was finished (timezone-aware)
    document_id: str  # what the target knows this version by (identity.py)
    recording_id: str  # urn:uuid of the recording in this store (identity.py)
    metadata: Mapping[str, str] = field(default_factory=dict)
    replaces_document_id: str | None = None  # the replaced version's document_id
    # `DocumentReference/<id>` a FHIR server gave the replaced version, when there is one.
    replaces_reference: str | None = None


def version_search_token(document_id: str) -> str:
    """`identifier=<system>|<value>` of one version's masterIdentifier (FHIR R4's
    DocumentReference `identifier` search parameter covers masterIdentifier too)."""
    return f"identifier={URI_SYSTEM}|{document_id}"


def build_document_reference(
    note: Note, *, note_code: str = DEFAULT_NOTE_CODE
) -> DocumentReference:
    """The DocumentReference of one transcript; raises DocumentInvalid."""
    try:
        return DocumentReference(**_document_fields(note, note_code=note_code))
    except ValidationError as exc:
        fields = sorted({".".join(str(p) for p in e["loc"][:3]) for e in exc.errors()})
        raise DocumentInvalid(
            f"{note.source} ({note.language}): the FHIR DocumentReference is not valid "
            f"at {', '.join(fields[:3])}; check the manifest's values for this recording"
        ) from None


def _document_fields(note: Note, *, note_code: str) -> dict[str, Any]:
    data = note.text.encode("utf-8")
    meta = note.metadata
    fields: dict[str, Any] = {
        "id": note.document_id.removeprefix("urn:uuid:"),
        "masterIdentifier": Identifier(system=URI_SYSTEM, value=note.document_id),
        "identifier": [Identifier(system=URI_SYSTEM, value=note.recording_id)],
        "status": "current",
        "docStatus": "preliminary" if note.status == "needs_review" else "final",
        "type": _note_type(note_code),
        "date": note.created_at.isoformat(),
        "content": [DocumentReferenceContent(attachment=_attachment(note, data))],
    }
    if meta.get("patient_id"):
        fields["subject"] = Reference(identifier=Identifier(value=meta["patient_id"]))
    if meta.get("author"):
        fields["author"] = [Reference(display=meta["author"])]
    if meta.get("encounter"):
        encounter = Reference(identifier=Identifier(value=meta["encounter"]))
        fields["context"] = DocumentReferenceContext(encounter=[encounter])
    if note.replaces_document_id and note.replaces_document_id != note.document_id:
        target = Reference(
            reference=note.replaces_reference,
            identifier=Identifier(system=URI_SYSTEM, value=note.replaces_document_id),
        )
        fields["relatesTo"] = [DocumentReferenceRelatesTo(code="replaces", target=target)]
    return fields


def _note_type(note_code: str) -> CodeableConcept:
    display = _NOTE_DISPLAYS.get(note_code)
    coding = Coding(system=LOINC_SYSTEM, code=note_code, display=display)
    return CodeableConcept(coding=[coding], text=display)


def _attachment(note: Note, data: bytes) -> Attachment:
    # FHIR: `hash` is the SHA-1 of the data (the bytes, before base64), itself base64.
    return Attachment(
        contentType=TEXT_CONTENT_TYPE,
        language=note.language,
        data=base64.b64encode(data),
        size=len(data),
        hash=base64.b64encode(hashlib.sha1(data).digest()),  # noqa: S324 FHIR's choice
        creation=note.metadata.get("date") or note.created_at.isoformat(),
    )


def build_bundle(documents: Iterable[DocumentReference]) -> Bundle:
    """A Bundle of type collection, one entry (fullUrl urn:uuid) per DocumentReference."""
    entries = [
        BundleEntry(fullUrl=f"urn:uuid:{document.id}", resource=document) for document in documents
    ]
    return Bundle(type="collection", entry=entries or None)


def resource_json_bytes(resource: DocumentReference | Bundle) -> bytes:
    """The resource as compact UTF-8 JSON (what is uploaded or written)."""
    return resource.model_dump_json(exclude_none=True).encode("utf-8")


def parse_bundle(data: bytes) -> Bundle:
    """Validate bytes as a FHIR Bundle (tests and the export check); raises ValueError."""
    return Bundle.model_validate(json.loads(data))
