"""Opening the store: URLs, SQLite file setup, transaction kinds, error translation."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

import pytest
from sqlalchemy import event, text

from config.errors import ConfigError
from config.settings import StorageSettings, redact_url_password
from storage.database import (
    Store,
    current_revision,
    database_exists,
    downgrade_database,
    head_revision,
    normalize_database_url,
)
from storage.errors import DatabaseUrlInvalid, SchemaOutdated, StoreUnavailable
from storage.sources import SourceFile

LANG = "en-IN"


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{path}"


def open_store(url: str, **settings) -> Store:
    return Store.open(StorageSettings(database_url=url, **settings))


@pytest.mark.parametrize(
    ("given", "driver"),
    [
        ("postgres://u:p@db/medasr", "postgresql+psycopg"),
        ("postgresql://u:p@db/medasr", "postgresql+psycopg"),
        ("postgresql+psycopg://u:p@db/medasr", "postgresql+psycopg"),
        ("sqlite:///./medasr.db", "sqlite"),
    ],
    ids=["postgres", "postgresql", "explicit-psycopg", "sqlite"],
)
def test_database_urls_are_normalized(given: str, driver: str) -> None:
    assert normalize_database_url(given).drivername == driver


@pytest.mark.parametrize(
    "given",
    ["mysql://u:p@db/x", "not a url", "oracle://db", "postgresql://u:s3cret@db:notaport/x"],
    ids=["mysql", "garbage", "oracle", "port-not-a-number"],
)
def test_unusable_database_urls_are_configuration_errors(given: str) -> None:
    with pytest.raises(DatabaseUrlInvalid) as caught:
        normalize_database_url(given)
    assert isinstance(caught.value, ConfigError)
    assert "MEDASR_DATABASE_URL" in str(caught.value)
    assert "s3cret" not in str(caught.value)


def test_missing_sqlite_folder_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(DatabaseUrlInvalid, match="does not exist"):
        open_store(sqlite_url(tmp_path / "nowhere" / "medasr.db"))


def test_redacted_url_hides_the_password() -> None:
    shown = redact_url_password("postgresql://medasr:s3cret@db.example/medasr")
    assert "s3cret" not in shown
    assert "db.example" in shown


def test_unreachable_server_is_transient_and_keeps_the_password_out(tmp_path: Path) -> None:
    url = f"postgresql://medasr:s3cret@/medasr?host={tmp_path}&connect_timeout=2"
    with pytest.raises(StoreUnavailable) as caught:
        open_store(url)
    assert caught.value.transient
    assert "s3cret" not in str(caught.value)


def test_new_sqlite_file_is_private_and_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "medasr.db"
    old_umask = os.umask(0)
    try:
        store = open_store(sqlite_url(path), busy_timeout_ms=1234)
        with store.unit_of_work() as uow:
            uow.items.register_items([SourceFile("/a.wav", 1, "1")], language=LANG)
    finally:
        os.umask(old_umask)
    try:
        for name in ("medasr.db", "medasr.db-wal", "medasr.db-shm"):
            assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o600, name
        with store.engine.connect() as connection:
            assert connection.execute(text("PRAGMA journal_mode")).scalar() == "wal"
            assert connection.execute(text("PRAGMA busy_timeout")).scalar() == 1234
            assert connection.execute(text("PRAGMA foreign_keys")).scalar() == 1
    finally:
        store.dispose()
    assert current_revision_of(sqlite_url(path)) == head_revision()


def current_revision_of(url: str) -> str | None:
    store = open_store(url)
    try:
        return current_revision(store.engine)
    finally:
        store.dispose()


def test_database_exists_only_false_for_a_missing_sqlite_file(tmp_path: Path) -> None:
    assert not database_exists(sqlite_url(tmp_path / "x.db"))
    assert database_exists("postgresql://u@db/x")
    open_store(sqlite_url(tmp_path / "x.db")).dispose()
    assert database_exists(sqlite_url(tmp_path / "x.db"))


def test_in_memory_sqlite_works() -> None:
    store = open_store("sqlite://")
    try:
        with store.unit_of_work() as uow:
            uow.items.register_items([SourceFile("/a.wav", 1, "1")], language=LANG)
        with store.unit_of_work(read_only=True) as uow:
            assert uow.item_queries.pending_count(language=LANG) == 1
    finally:
        store.dispose()


def statements_of(store: Store) -> list[str]:
    seen: list[str] = []

    @event.listens_for(store.engine, "before_cursor_execute")
    def _seen(conn, cursor, statement, parameters, context, executemany) -> None:
        seen.append(" ".join(statement.split()))

    return seen


def test_sqlite_writes_begin_immediate_and_reads_begin_deferred(tmp_path: Path) -> None:
    store = open_store(sqlite_url(tmp_path / "medasr.db"))
    seen = statements_of(store)
    try:
        with store.unit_of_work() as uow:
            uow.items.register_items([SourceFile("/a.wav", 1, "1")], language=LANG)
        assert seen[0] == "BEGIN IMMEDIATE"
        seen.clear()
        with store.unit_of_work(read_only=True) as uow:
            uow.item_queries.pending_count(language=None)
        assert seen[0] == "BEGIN"
    finally:
        store.dispose()


def test_sqlite_writer_waits_then_gives_up_transiently(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path / "medasr.db")
    holder, waiter = open_store(url), open_store(url, busy_timeout_ms=100)
    try:
        with holder.unit_of_work() as uow:
            uow.items.register_items([SourceFile("/a.wav", 1, "1")], language=LANG)
            with pytest.raises(StoreUnavailable) as caught, waiter.unit_of_work() as other:
                other.items.register_items([SourceFile("/b.wav", 1, "1")], language=LANG)
            assert caught.value.transient
            with waiter.unit_of_work(read_only=True) as reader:  # WAL: readers never wait
                assert reader.item_queries.pending_count(language=None) == 0
    finally:
        holder.dispose()
        waiter.dispose()


def test_opening_and_reading_do_not_wait_behind_a_sqlite_writer(tmp_path: Path) -> None:
    path = tmp_path / "medasr.db"
    url = sqlite_url(path)
    store = open_store(url)
    with store.unit_of_work() as uow:
        uow.items.register_items([SourceFile("/a.wav", 1, "1")], language=LANG)
    store.dispose()
    writer = sqlite3.connect(path, isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")  # another process holds the write lock
        writer.execute("UPDATE items SET attempts = attempts + 1")
        reader = open_store(url, busy_timeout_ms=3000)  # a wait would end in StoreUnavailable
        try:
            with reader.unit_of_work(read_only=True) as uow:
                counts = uow.item_queries.status_counts()
                uow.item_queries.list_failures(limit=5)
        finally:
            reader.dispose()
        assert [(c.status, c.items) for c in counts] == [("pending", 1)]
    finally:
        writer.rollback()
        writer.close()


def test_older_sqlite_file_is_upgraded_when_opened(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path / "medasr.db")
    open_store(url).dispose()
    assert downgrade_database(url) == "base"
    assert current_revision_of(url) == head_revision()


@pytest.mark.postgres
def test_postgres_schema_is_not_upgraded_behind_the_operator_back(fresh_postgres_url) -> None:
    with pytest.raises(SchemaOutdated, match="medasr db upgrade"):
        open_store(fresh_postgres_url)
    Store.open(StorageSettings(database_url=fresh_postgres_url), upgrade=True).dispose()
    open_store(fresh_postgres_url).dispose()


@pytest.mark.postgres
def test_postgres_claims_lock_with_skip_locked(fresh_postgres_url) -> None:
    store = Store.open(StorageSettings(database_url=fresh_postgres_url), upgrade=True)
    seen = statements_of(store)
    try:
        with store.unit_of_work() as uow:
            uow.items.register_items([SourceFile("/a.wav", 1, "1")], language=LANG)
            uow.claims.claim_batch(owner="w", language=LANG, limit=1, lease_s=5)
        assert any("FOR UPDATE SKIP LOCKED" in s for s in seen)
    finally:
        store.dispose()
