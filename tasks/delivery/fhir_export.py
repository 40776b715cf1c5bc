"""`medasr export --format fhir`: one FHIR R4 Bundle of DocumentReferences, validated.

Recordings with a transcript are exported (done, and needs_review as preliminary);
those without text (pending, failed, skipped) have no document to reference. A
recording whose transcript replaced a delivered one says so (`relatesTo` replaces). A
version goes under the identifiers delivery files it by: its newest filing when the
record holds it, else the filing the next delivery gives it (a version that is the note
again after another replaced it is filed anew, `deliveries.filing`), replacing the
newest version delivered. The file is written the way every export is: mode 0600,
beside its target, then renamed.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

from fhir.resources.R4B.documentreference import DocumentReference

from config.errors import MedasrError
from storage.export import write_private_bytes
from storage.interface import UnitOfWorkFactory
from storage.versions import item_version
from tasks.delivery.documents import note_of
from tasks.delivery.fhir_documents import (
    build_bundle,
    build_document_reference,
    parse_bundle,
    resource_json_bytes,
)
from tasks.delivery.identity import NoteKey, note_urn
from tasks.discovery.recording_names import reason_about

logger = logging.getLogger("medasr.export")

_PAGE = 500
_WITH_TEXT = ("done", "needs_review")


def write_fhir_bundle(
    store: UnitOfWorkFactory,
    out_path: Path,
    *,
    status: str | None,
    note_code: str,
    language: str | None = None,
    force: bool = False,
) -> tuple[int, int]:
    """Write the bundle; returns (documents written, recordings left out as invalid).

    Raises ExportRefused (a link or a file medasr did not write at `out_path`, without
    `force`) and OSError.
    """
    documents: list[DocumentReference] = []
    invalid = 0
    for wanted in (status,) if status is not None else _WITH_TEXT:
        if wanted not in _WITH_TEXT:
            continue
        for document in _documents(store, status=wanted, note_code=note_code, language=language):
            if document is None:
                invalid += 1
            else:
                documents.append(document)
    data = resource_json_bytes(build_bundle(documents))
    parse_bundle(data)  # what is written must read back as a valid Bundle
    write_private_bytes(out_path, data, force=force)
    return len(documents), invalid


def _documents(
    store: UnitOfWorkFactory, *, status: str, note_code: str, language: str | None
) -> list[DocumentReference | None]:
    found: list[DocumentReference | None] = []
    after = 0
    with store.unit_of_work(read_only=True) as uow:
        roots = uow.runs.run_sources()  # a recording is named relative to its source
        store_id = uow.deliveries.store_identity()
    while True:
        with store.unit_of_work(read_only=True) as uow:
            page = uow.item_queries.done_items_page(
                language=language, after_id=after, limit=_PAGE, status=status
            )
            delivered = uow.deliveries.delivered_filings([item.id for item in page])
        if not page:
            return found
        for item in page:
            current = NoteKey(store_id, item.id, item.language, item_version(item))
            key, replaced = exported_filing(current, delivered.get(item.id, []))
            note = note_of(
                item, key=key, replaces_document_id=note_urn(replaced) if replaced else None
            )
            try:
                found.append(build_document_reference(note, note_code=note_code))
            except MedasrError as exc:
                why = reason_about(exc.message, uri=item.source_uri, roots=roots)
                logger.warning("left out of the FHIR export: %s", why)
                found.append(None)
        after = page[-1].id


def exported_filing(
    current: NoteKey, delivered: list[tuple[str, int]]
) -> tuple[NoteKey, NoteKey | None]:
    """The filing of the current version the export names, and the one it replaces.

    `delivered`: (version, filing) of the note's delivered rows, oldest first. When the
    newest is the current version, the record holds that filing, replacing the newest
    other version before it; otherwise the next delivery files the current version anew
    (one filing more than its last, storage/versions.py plan_version) as the replacement
    of the newest delivered."""
    filings = [replace(current, version=v, filing=f) for v, f in delivered]
    if filings and filings[-1].version == current.version:
        before = [k for k in filings if k.version != current.version]
        return filings[-1], before[-1] if before else None
    same = [k.filing for k in filings if k.version == current.version]
    key = replace(current, filing=same[-1] + 1) if same else current
    return key, filings[-1] if filings else None
