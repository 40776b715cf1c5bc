"""Recordings held for review in a real store, and reviewers, for the review tests."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from storage.audit_records import AuditEvent, AuditFilter
from storage.records import ItemRecord
from storage.review_interface import ReviewStore
from storage.sources import SourceFile
from tasks.review.accounts import add_reviewer

LANG = "en-IN"
PASSWORD = "correct horse battery"


@dataclass(frozen=True)
class Segment:
    start_ms: int
    end_ms: int
    text: str


def add_transcribed(
    store: ReviewStore,
    uri: str,
    *,
    segments: Sequence[Segment],
    flags: Sequence[str] = ("repetition",),
    language: str = LANG,
    sha256: str = "ab" * 32,
    size_bytes: int = 10,
    version: str = "v1",
) -> int:
    """Register, claim and finish one recording with these chunks; returns its id.
    The fingerprint (sha256, size, listing version) is made up unless given
    (`file_fingerprint` gives a real file's)."""
    with store.unit_of_work() as uow:
        uow.items.register_items([SourceFile(uri, size_bytes, version)], language=language)
        [claimed] = uow.claims.claim_batch(
            owner="w", language=language, limit=1, lease_s=60, uris=[uri]
        )
        token = claimed.lease_token
        uow.claims.set_fingerprint(
            claimed.id, sha256=sha256, size_bytes=size_bytes, lease_token=token
        )
        for index, segment in enumerate(segments, start=1):
            uow.chunks.record_chunk_result(
                claimed.id, lease_token=token, index=index, start_ms=segment.start_ms,
                end_ms=segment.end_ms, size_bytes=9, text=segment.text,
            )  # fmt: skip
        uow.claims.finish_item(
            claimed.id, lease_token=token, text=" ".join(s.text for s in segments),
            duration_ms=segments[-1].end_ms if segments else 0, chunk_count=len(segments),
            extras={}, flags=list(flags),
        )  # fmt: skip
    return claimed.id


def file_fingerprint(path: Path) -> dict[str, Any]:
    """A real file's sha256, size and listing version (mtime_ns), as a run records them."""
    stat = path.stat()
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return {"sha256": digest, "size_bytes": stat.st_size, "version": str(stat.st_mtime_ns)}


def get_item(store: ReviewStore, item_id: int) -> ItemRecord:
    with store.unit_of_work(read_only=True) as uow:
        found = uow.item_queries.get_item(item_id)
    assert found is not None
    return found


def add_account(store: ReviewStore, name: str, *, role: str = "reviewer") -> None:
    with store.unit_of_work() as uow:
        add_reviewer(uow, name=name, role=role, password=PASSWORD)


def audit_events(store: ReviewStore) -> list[AuditEvent]:
    """Every event of the audit trail, oldest first."""
    with store.unit_of_work(read_only=True) as uow:
        return list(uow.audit.events(AuditFilter()))


def audit_actions(store: ReviewStore) -> list[str]:
    """The actions of the audit trail, oldest first."""
    return [event.action for event in audit_events(store)]
