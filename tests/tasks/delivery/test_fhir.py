"""FHIR R4 DocumentReference and Bundle: built and validated with fhir.resources (R4B)."""

from __future__ import annotations

import base64
import hashlib
from datetime import UTC, datetime

import pytest
from fhir.resources.R4B.bundle import Bundle

from tasks.delivery.errors import DocumentInvalid
from tasks.delivery.fhir_documents import (
    TEXT_CONTENT_TYPE,
    Note,
    build_bundle,
    build_document_reference,
    parse_bundle,
    resource_json_bytes,
)
from tasks.delivery.identity import NoteKey, note_urn, recording_urn

DONE_AT = datetime(2026, 11, 23, 9, 30, tzinfo=UTC)


def note(**changes) -> Note:
    values = {
        "source": "/archive/ward 3/a.wav",
        "language": "hi",
        "status": "done",
        "text": "रोगी को paracetamol 500 mg दिन में दो बार",
        "content_sha256": "ab" * 32,
        "version": "cd" * 32,
        "created_at": DONE_AT,
        "metadata": {},
    }
    values |= changes
    key = NoteKey("STORE001", 1, str(values["language"]), str(values["version"]))
    values.setdefault("document_id", note_urn(key))
    values.setdefault("recording_id", recording_urn(store_id="STORE001", item_id=1, language="hi"))
    return Note(**values)  # type: ignore[arg-type]


def test_a_document_reference_carries_the_transcript_as_fhir_defines_it() -> None:
    document = build_document_reference(note())
    data = note().text.encode("utf-8")
    attachment = document.content[0].attachment
    assert document.status == "current"
    assert document.docStatus == "final"
    assert document.type.coding[0].system == "http://loinc.org"
    assert document.type.coding[0].code == "11506-3"
    assert attachment.contentType == TEXT_CONTENT_TYPE
    assert attachment.language == "hi"
    assert attachment.data == data  # the model holds the decoded bytes
    assert attachment.size == len(data)
    assert attachment.hash == hashlib.sha1(data).digest()
    written = resource_json_bytes(document).decode()
    assert base64.b64encode(hashlib.sha1(data).digest()).decode() in written
    assert base64.b64encode(data).decode() in written
    assert document.subject is None
    assert not document.author
    assert document.relatesTo is None


def test_manifest_columns_become_subject_author_encounter_and_creation() -> None:
    meta = {"patient_id": "P-77", "author": "Dr. Rao", "encounter": "E-5", "date": "2024-03-01"}
    document = build_document_reference(note(metadata=meta), note_code="18842-5")
    assert document.subject.identifier.value == "P-77"
    assert document.author[0].display == "Dr. Rao"
    assert document.context.encounter[0].identifier.value == "E-5"
    assert str(document.content[0].attachment.creation) == "2024-03-01"
    assert document.type.coding[0].code == "18842-5"


def test_needs_review_is_preliminary() -> None:
    assert build_document_reference(note(status="needs_review")).docStatus == "preliminary"


def test_the_identifiers_are_the_notes_and_the_recordings_as_given() -> None:
    one = build_document_reference(note())
    other_text = build_document_reference(note(text="changed", version="ef" * 32))
    assert one.identifier[0].value == other_text.identifier[0].value
    assert one.identifier[0].value == recording_urn(store_id="STORE001", item_id=1, language="hi")
    assert one.masterIdentifier.value == note_urn(NoteKey("STORE001", 1, "hi", "cd" * 32))
    assert other_text.masterIdentifier.value != one.masterIdentifier.value
    assert f"urn:uuid:{one.id}" == one.masterIdentifier.value


def test_a_new_version_replaces_the_old_one() -> None:
    replaced = note_urn(NoteKey("STORE001", 1, "hi", "00" * 32))
    document = build_document_reference(note(replaces_document_id=replaced))
    (relation,) = document.relatesTo
    assert relation.code == "replaces"
    assert relation.target.identifier.value == replaced


def test_a_manifest_value_fhir_refuses_is_a_typed_error_naming_the_recording() -> None:
    with pytest.raises(DocumentInvalid, match=r"ward 3/a\.wav.*manifest") as caught:
        build_document_reference(note(metadata={"date": "yesterday"}))
    assert "paracetamol" not in str(caught.value)


def test_a_bundle_is_a_valid_collection_that_reads_back() -> None:
    documents = [
        build_document_reference(note()),
        build_document_reference(note(version="ee" * 32)),
    ]
    data = resource_json_bytes(build_bundle(documents))
    bundle = parse_bundle(data)
    assert isinstance(bundle, Bundle)
    assert bundle.type == "collection"
    assert [e.resource.get_resource_type() for e in bundle.entry] == ["DocumentReference"] * 2
    assert all(e.fullUrl == f"urn:uuid:{e.resource.id}" for e in bundle.entry)
    with pytest.raises(ValueError):
        parse_bundle(data.replace(b'"type":"collection",', b""))  # type is required
