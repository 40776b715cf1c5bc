"""One transcript as the document to upload: its bytes (txt or FHIR) and its query string.

The vendor does not say which query parameters tie a document to a patient, so they
come from MEDASR_DOCS_QUERY, a query-string template such as
`patient_id={patient_id}&dt={doc_type}` filled from the recording's manifest columns.
The template is checked once (DocsQueryInvalid, exit 2); a recording without a column
the template names gets MetadataMissing, recorded on its delivery row.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from urllib.parse import parse_qsl

from service.docs_client import Document
from storage.records import ItemRecord
from tasks.delivery.errors import DocsQueryInvalid, MetadataMissing, PatientLinkMissing
from tasks.delivery.fhir_documents import (
    FHIR_MEDIA_TYPE,
    TEXT_CONTENT_TYPE,
    Note,
    build_document_reference,
    resource_json_bytes,
)
from tasks.delivery.identity import NoteKey, note_urn, recording_urn

FORMATS = ("txt", "fhir")


@dataclass(frozen=True)
class DocsQuery:
    """A parsed MEDASR_DOCS_QUERY: (name, value template, fields the value needs)."""

    pairs: tuple[tuple[str, str, tuple[str, ...]], ...] = ()

    @property
    def fields(self) -> tuple[str, ...]:
        """Every manifest column the template needs, in order, once."""
        return tuple(dict.fromkeys(f for _, _, needed in self.pairs for f in needed))

    def fill(self, metadata: Mapping[str, str], *, source: str) -> tuple[tuple[str, str], ...]:
        """The query parameters of one recording; raises MetadataMissing."""
        missing = [name for name in self.fields if not metadata.get(name)]
        if missing:
            raise MetadataMissing(
                f"{source}: the manifest gives no {', '.join(missing)} for this recording, "
                "and MEDASR_DOCS_QUERY needs it; add it to the manifest and run again"
            )
        return tuple((name, value.format_map(metadata)) for name, value, _ in self.pairs)


def require_patient_link(query: DocsQuery, *, allow_unlinked: bool) -> None:
    """The docs upload links a note to its patient only through MEDASR_DOCS_QUERY: without
    a template naming a manifest column it is refused (PatientLinkMissing, exit 2)."""
    if not query.fields and not allow_unlinked:
        raise PatientLinkMissing(
            "MEDASR_DOCS_QUERY names no manifest column, so the docs upload would file notes "
            "with no patient; set it (e.g. patient_id={patient_id}) or pass --allow-unlinked"
        )


def parse_docs_query(template: str) -> DocsQuery:
    """Check MEDASR_DOCS_QUERY once; raises DocsQueryInvalid with the reason."""
    text = template.strip().lstrip("?")
    if not text:
        return DocsQuery()
    pairs = []
    for name, value in parse_qsl(text, keep_blank_values=True, strict_parsing=False):
        if not name or "{" in name or "}" in name:
            raise DocsQueryInvalid(
                f"MEDASR_DOCS_QUERY: parameter name {name!r} must be plain text, "
                "e.g. patient_id={patient_id}&dt={doc_type}"
            )
        pairs.append((name, value, _fields_of(value)))
    return DocsQuery(tuple(pairs))


def _fields_of(value: str) -> tuple[str, ...]:
    try:
        parts = list(string.Formatter().parse(value))
    except ValueError as exc:
        raise DocsQueryInvalid(
            f"MEDASR_DOCS_QUERY: {value!r} is not a valid template ({exc}); "
            "write columns as {column} and a literal brace as {{ or }}"
        ) from None
    fields = []
    for _, name, spec, conversion in parts:
        if name is None:
            continue
        if not name.isidentifier() or spec or conversion:
            raise DocsQueryInvalid(
                f"MEDASR_DOCS_QUERY: {{{name}}} must name a manifest column, "
                "e.g. {patient_id}, with no format or conversion"
            )
        fields.append(name)
    return tuple(fields)


def build_document(
    item: ItemRecord, note: Note, *, format_name: str, query: DocsQuery, note_code: str
) -> Document:
    """The upload for one done item; raises MetadataMissing or DocumentInvalid."""
    params = query.fill(item.metadata, source=item.source_uri)
    stem = PurePosixPath(item.source_uri.replace("\\", "/")).stem or "transcript"
    if format_name == "fhir":
        resource = build_document_reference(note, note_code=note_code)
        return Document(
            content=resource_json_bytes(resource),
            filename=f"{stem}.json",
            content_type=FHIR_MEDIA_TYPE,
            params=params,
        )
    return Document(
        content=note.text.encode("utf-8"),
        filename=f"{stem}.txt",
        content_type=TEXT_CONTENT_TYPE,
        params=params,
    )


def note_of(
    item: ItemRecord,
    *,
    key: NoteKey,
    document_id: str | None = None,
    replaces_document_id: str | None = None,
    text: str | None = None,
) -> Note:
    """What the document says about a finished item: `key` names the note (its store,
    recording, language and version), `document_id` what the target knows it by (the
    URN when None), `text` the words of that version when they are no longer the item's."""
    return Note(
        source=item.source_uri,
        language=item.language,
        status=item.status,
        text=item.text or "" if text is None else text,
        content_sha256=item.sha256 or "",
        version=key.version,
        created_at=item.done_at or item.updated_at,
        document_id=document_id or note_urn(key),
        recording_id=recording_urn(
            store_id=key.store_id, item_id=key.item_id, language=key.language
        ),
        metadata=item.metadata,
        replaces_document_id=replaces_document_id,
    )
