"""Revision 0011_identity: a store identity made once, sent rows keep their identifiers."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from config.settings import StorageSettings
from storage import open_store
from storage.database import upgrade_database
from tests.helpers.raw_sql import run_sql as _sql

NOW = "2026-11-27 07:00:00"


def _delivery(row_id: int, *, target: str, status: str, response: dict[str, str] | None) -> str:
    answer = "NULL" if response is None else f"'{json.dumps(response)}'"
    return (
        "INSERT INTO deliveries (id, item_id, language, version, format, status, attempts, "
        f"retryable, created_at, updated_at, target, response) VALUES ({row_id}, 1, 'en-IN', "
        f"'{str(row_id) * 64}', 'mdm', '{status}', 1, false, '{NOW}', '{NOW}', '{target}', "
        f"{answer})"
    )


def test_an_existing_store_gets_an_identity_and_sent_rows_keep_what_they_went_out_as(
    store_url: str,
) -> None:
    url = store_url
    upgrade_database(url, revision="0010_review")
    mllp = "mllp://127.0.0.1:2575"
    _sql(
        url,
        "INSERT INTO items (id, source_uri, language, source_version, size_bytes, status, "
        f"retryable, attempts, created_at, updated_at) VALUES (1, '/d/a.wav', 'en-IN', 'v1', 1, "
        f"'done', false, 1, '{NOW}', '{NOW}')",
        _delivery(1, target=mllp, status="delivered", response={"msh_10": "M1", "txa_12": "T1"}),
        _delivery(2, target=mllp, status="in_doubt", response=None),
        _delivery(3, target="docs", status="pending", response=None),
    )
    upgrade_database(url)
    rows = _sql(url, "SELECT id, control_id, document_id, series FROM deliveries ORDER BY id")
    old_control = hashlib.sha256(f"msh10\n2\n{mllp}\n0".encode()).hexdigest()[:20].upper()
    assert rows[0] == (1, "M1", "T1", 0)  # as recorded in the receiver's answer
    assert rows[1][1] == old_control  # an in-doubt resend must carry the same MSH-10
    assert str(rows[1][2]).startswith("MEDASR-")
    assert rows[2] == (3, None, None, 0)  # never sent: it goes out under the new identifiers
    store = open_store(StorageSettings(database_url=url), upgrade=True)
    try:
        with store.unit_of_work(read_only=True) as uow:
            made = uow.deliveries.store_identity()
    finally:
        store.dispose()
    assert len(made) == 8
    upgrade_database(url)  # later upgrades keep it
    assert _sql(url, "SELECT store_id FROM store_identity") == [(made,)]


def test_two_new_stores_have_two_identities(tmp_path: Path) -> None:
    made = set()
    for name in ("one.db", "two.db"):
        url = f"sqlite:///{tmp_path / name}"
        upgrade_database(url)
        made |= {row[0] for row in _sql(url, "SELECT store_id FROM store_identity")}
    assert len(made) == 2
