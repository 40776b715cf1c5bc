"""Purged means purged: a purged row never takes patient data again, and its receipt
cannot be turned back into the values it removed.

The store on SQLite and PostgreSQL; the manifest as `medasr run` stores it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from storage.audit_records import AuditFilter
from storage.interface import UnitOfWorkFactory
from tasks.retention.durations import parse_retention
from tasks.retention.recording_purge import PurgeRequest, purge_recordings
from tests.tasks.delivery.delivery_helpers import make_done

LATER = datetime.now(UTC) + timedelta(days=100)
PATIENTS = {f"/ward/{n}.wav": f"{482910 + n:06d}" for n in range(8)}  # six-digit ids
MANIFEST = {uri: {"patient_id": pid, "author": "Dr Qwerty"} for uri, pid in PATIENTS.items()}


def _purge(store: UnitOfWorkFactory, tmp_path: Path) -> None:
    request = PurgeRequest(retention=parse_retention("90d"), actor="os:officer@host")
    result = purge_recordings(store, request, journal_folder=tmp_path / "journal", now=LATER)
    assert result.total == len(PATIENTS)


def _strings(value: Any) -> set[str]:
    """Every string anywhere in a JSON value."""
    if isinstance(value, dict):
        return set().union(*(_strings(v) for v in value.values()), set(value))
    if isinstance(value, list):
        return set().union(*(_strings(v) for v in value)) if value else set()
    return {value} if isinstance(value, str) else set()


def test_a_purged_row_never_takes_the_manifest_again(
    audit_store: UnitOfWorkFactory, tmp_path: Path
) -> None:
    items = make_done(audit_store, dict.fromkeys(PATIENTS, "words"), metadata=MANIFEST)
    _purge(audit_store, tmp_path)
    with audit_store.unit_of_work() as uow:  # the next `medasr run` over the same source
        changed = uow.items.set_item_metadata(MANIFEST, language=None)
    with audit_store.unit_of_work(read_only=True) as uow:
        rows = [uow.item_queries.get_item(i.id) for i in items.values()]
    assert changed == 0
    assert [(r.status, r.metadata) for r in rows if r is not None] == [("purged", {})] * 8


def test_the_receipt_holds_nothing_a_hash_of_a_candidate_id_equals(
    audit_store: UnitOfWorkFactory, tmp_path: Path
) -> None:
    items = make_done(audit_store, dict.fromkeys(PATIENTS, "words"), metadata=MANIFEST)
    _purge(audit_store, tmp_path)
    with audit_store.unit_of_work(read_only=True) as uow:
        rows = [uow.item_queries.get_item(i.id) for i in items.values()]
        events = [vars(e) for e in uow.audit.events(AuditFilter())]
    kept = set().union(*(_strings(r.extras) for r in rows if r is not None))
    kept |= _strings(json.loads(json.dumps(events, default=str)))
    # The attacker's brute force over every six-digit id, as the metadata was hashed:
    # each candidate's manifest columns, serialized the way the store kept them.
    found = [
        pid
        for uri, pid in PATIENTS.items()
        for candidate in (pid, json.dumps(MANIFEST[uri], sort_keys=True, ensure_ascii=False))
        if hashlib.sha256(candidate.encode()).hexdigest() in kept
    ]
    assert found == []
    assert not any(pid in " ".join(kept) for pid in PATIENTS.values())


def test_the_site_that_keeps_the_key_can_still_match_a_copy(
    audit_store: UnitOfWorkFactory, tmp_path: Path
) -> None:
    items = make_done(audit_store, dict.fromkeys(PATIENTS, "words"), metadata=MANIFEST)
    _purge(audit_store, tmp_path)
    key = (tmp_path / "receipt.key").read_bytes()  # in the data dir, not in the store
    assert oct((tmp_path / "receipt.key").stat().st_mode & 0o777) == "0o600"
    with audit_store.unit_of_work(read_only=True) as uow:
        row = uow.item_queries.get_item(next(iter(items.values())).id)
    assert row is not None
    kept = row.extras["purged"]["hmac_sha256"]
    assert kept["text"] == hmac.new(key, b"words", hashlib.sha256).hexdigest()
