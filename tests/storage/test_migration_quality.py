"""Revision 0003 (quality gate): needs_review and items.flags, up, down and up again."""

from __future__ import annotations

import pytest
from sqlalchemy import exc as sa_exc
from sqlalchemy import inspect

from config.settings import StorageSettings
from storage import open_store
from storage.database import (
    create_store_engine,
    downgrade_database,
    head_revision,
    upgrade_database,
)
from tests.storage.repository_helpers import LANG, claim, listed, register

NOW = "2026-11-23 12:00:00"


def _flagged_item(url: str) -> int:
    """An item at the head revision that the quality gate sent to review."""
    store = open_store(StorageSettings(database_url=url), upgrade=True)
    try:
        register(store, listed(1))
        (item,) = claim(store)
        with store.unit_of_work() as uow:
            uow.claims.finish_item(
                item.id,
                lease_token=item.lease_token,
                text="the patient the patient the patient the patient",
                duration_ms=4000,
                chunk_count=1,
                extras={},
                flags=["repetition"],
            )
        with store.unit_of_work(read_only=True) as uow:
            stored = uow.item_queries.get_item(item.id)
        assert stored is not None
        assert (stored.status, stored.flags) == ("needs_review", ["repetition"])
        return item.id
    finally:
        store.dispose()


def _columns(url: str) -> set[str]:
    engine = create_store_engine(url)
    try:
        return {column["name"] for column in inspect(engine).get_columns("items")}
    finally:
        engine.dispose()


def _insert_status(url: str, status: str) -> None:
    """Insert a bare item row with `status` (raw SQL: the models may be ahead of the schema)."""
    engine = create_store_engine(url)
    try:
        with engine.begin() as connection:
            connection.exec_driver_sql(
                "INSERT INTO items (source_uri, language, source_version, size_bytes, status, "
                "retryable, attempts, created_at, updated_at) "
                f"VALUES ('/x/{status}.wav', '{LANG}', 'v1', 1, '{status}', false, 0, "
                f"'{NOW}', '{NOW}')"
            )
    finally:
        engine.dispose()


def _row(url: str, item_id: int) -> tuple[str, str | None, bool, str | None]:
    engine = create_store_engine(url)
    try:
        with engine.connect() as connection:
            row = connection.exec_driver_sql(
                f"SELECT status, error_kind, retryable, text FROM items WHERE id = {item_id}"
            ).one()
    finally:
        engine.dispose()
    return (row[0], row[1], bool(row[2]), row[3])


def test_up_down_up_keeps_every_row_and_the_status_check(store_url: str) -> None:
    item_id = _flagged_item(store_url)
    assert "flags" in _columns(store_url)
    with pytest.raises(sa_exc.IntegrityError):
        _insert_status(store_url, "bogus")  # the CHECK constraint is still there

    assert downgrade_database(store_url, revision="0001") == "0001"
    assert "flags" not in _columns(store_url)
    # Nobody accepted it: an older medasr must not take it for done.
    status, kind, retryable, text = _row(store_url, item_id)
    assert (status, kind, retryable) == ("failed", "needs_review", False)
    assert text == "the patient the patient the patient the patient"
    with pytest.raises(sa_exc.IntegrityError):
        _insert_status(store_url, "needs_review")

    assert upgrade_database(store_url) == head_revision()
    assert "flags" in _columns(store_url)
    _insert_status(store_url, "needs_review")
    with pytest.raises(sa_exc.IntegrityError):
        _insert_status(store_url, "bogus")
