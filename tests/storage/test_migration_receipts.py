"""Revision 0014: receipts of purges before keyed hashes lose their unkeyed SHA-256
values (a six-digit patient id was found again by hashing every candidate)."""

from __future__ import annotations

import hashlib
import json

import pytest
from sqlalchemy import text

from config.settings import StorageSettings
from storage import open_store
from storage.database import create_store_engine, downgrade_database, upgrade_database
from tests.storage.repository_helpers import claim, finish, listed, register

OLD_RECEIPT = {
    "purged": {
        "at": "2026-11-01T00:00:00+00:00",
        "by": "os:officer@host",
        "status": "done",
        "sha256": {"metadata": hashlib.sha256(b'{"patient_id": "482910"}').hexdigest()},
        "digest": "ab" * 32,
    }
}


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def url(request: pytest.FixtureRequest, sqlite_url: str) -> str:
    if request.param == "sqlite":
        return sqlite_url
    return str(request.getfixturevalue("postgres_store_url"))


def test_old_receipts_lose_their_unkeyed_hashes(url: str) -> None:
    store_url = url
    store = open_store(StorageSettings(database_url=store_url), upgrade=True)
    register(store, listed(2))
    purged, done = claim(store)
    finish(store, purged)
    finish(store, done)
    store.dispose()
    downgrade_database(store_url, revision="0013_refiling")
    engine = create_store_engine(store_url)
    with engine.begin() as connection:
        connection.execute(
            text("UPDATE items SET status = 'purged', text = NULL, extras = :e WHERE id = :i"),
            {"e": json.dumps(OLD_RECEIPT), "i": purged.id},
        )
    engine.dispose()
    upgrade_database(store_url)
    store = open_store(StorageSettings(database_url=store_url))
    with store.unit_of_work(read_only=True) as uow:
        receipt = uow.item_queries.get_item(purged.id).extras["purged"]  # type: ignore[union-attr]
        other = uow.item_queries.get_item(done.id)
    store.dispose()
    assert "sha256" not in receipt
    assert "digest" not in receipt
    assert (receipt["by"], receipt["unkeyed_hashes_removed"]) == ("os:officer@host", True)
    assert other is not None
    assert other.status == "done"
