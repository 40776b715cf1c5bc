"""What a purge leaves of a recording's text (transcript, chunk, a reviewer's draft, the
words a delivery went out with) in the database: nothing in any SQLite file. On
PostgreSQL every table it changed is VACUUMed, so no row version, live or dead, holds the
text (pageinspect reads the pages); the bytes can stay in a page's free space until a new
row reuses it, and the write-ahead log keeps them (docs/audit.md "Really gone")."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import create_engine
from sqlalchemy import text as sql

from config.settings import StorageSettings
from storage import open_store
from storage.database import normalize_database_url
from storage.interface import UnitOfWorkFactory
from tasks.retention.durations import parse_retention
from tasks.retention.purge import PurgeRequest, purge_recordings
from tests.audit.tampering import run_sql
from tests.retention.test_purge_store import add_chunk, deliver_rows
from tests.tasks.delivery.delivery_helpers import make_done

LATER = datetime.now(UTC) + timedelta(days=100)
NOTE = "patient Qzxjvbwk Plorfnug takes warfarin"
TABLES = ("items", "chunks", "deliveries", "revisions")


def add_revision(url: str, item_id: int, text: str) -> None:
    engine = create_engine(normalize_database_url(url))
    with engine.begin() as connection:
        connection.execute(
            sql(
                "INSERT INTO revisions (item_id, number, text, author, created_at,"
                " base_revision, kind, machine_sha256)"
                " VALUES (:i, 1, :t, 'alice', :now, 0, 'draft', :sha)"
            ),
            {"i": item_id, "t": text, "now": datetime.now(UTC), "sha": "0" * 64},
        )
    engine.dispose()


def tuples_holding(url: str, needle: str) -> list[str]:
    """The purged tables whose pages hold a row version (live, or dead and not yet
    vacuumed) with `needle` in it: every tuple of every page, read by pageinspect."""
    engine = create_engine(normalize_database_url(url), isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as connection:
            connection.execute(sql("CREATE EXTENSION IF NOT EXISTS pageinspect"))
            found = connection.execute(
                sql(
                    "SELECT DISTINCT t.name FROM unnest(CAST(:tables AS text[])) AS t(name),"
                    " generate_series(0, pg_relation_size(t.name)"
                    " / current_setting('block_size')::int - 1) AS b(block),"
                    " heap_page_items(get_raw_page(t.name, b.block)) AS i"
                    " WHERE position(CAST(:needle AS bytea) IN i.t_data) > 0"
                ),
                {"tables": list(TABLES), "needle": needle.encode()},
            ).scalars()
            return sorted(found)
    finally:
        engine.dispose()


def wal_holding(url: str, needle: str) -> bool:
    engine = create_engine(normalize_database_url(url))
    try:
        with engine.connect() as connection:
            data = Path(connection.execute(sql("SHOW data_directory")).scalar_one())
    finally:
        engine.dispose()
    wal = [p for p in (data / "pg_wal").iterdir() if p.is_file()]
    return any(needle.encode() in p.read_bytes() for p in wal)


def arrange(url: str, store: UnitOfWorkFactory) -> None:
    """One delivered recording whose text is also in a chunk, a reviewer's draft and the
    words its delivery went out with."""
    items = make_done(store, {"/ward/a.wav": NOTE})
    a = items["/ward/a.wav"].id
    add_chunk(url, a, NOTE)
    add_revision(url, a, NOTE)
    deliver_rows(store, {a: "delivered"})
    run_sql(url, f"UPDATE deliveries SET sent_text = '{NOTE}'")


def test_on_sqlite_no_file_of_the_database_holds_the_text(tmp_path: Path) -> None:
    folder = tmp_path / "db"
    folder.mkdir()
    url = f"sqlite:///{folder / 'medasr.db'}"
    store = open_store(StorageSettings(database_url=url), upgrade=True)
    try:
        arrange(url, store)
        assert [p.name for p in folder.iterdir() if NOTE.encode() in p.read_bytes()]
        request = PurgeRequest(retention=parse_retention("90d"), actor="os:officer@host")
        result = purge_recordings(store, request, journal_folder=tmp_path, now=LATER)
    finally:
        store.dispose()

    assert result.total == 1
    assert [p.name for p in folder.iterdir() if b"Qzxjvbwk" in p.read_bytes()] == []


@pytest.mark.postgres
def test_on_postgresql_a_purge_vacuums_every_table_and_the_wal_keeps_the_text(
    fresh_postgres_url: str, tmp_path: Path
) -> None:
    store = open_store(StorageSettings(database_url=fresh_postgres_url), upgrade=True)
    try:
        arrange(fresh_postgres_url, store)
        assert tuples_holding(fresh_postgres_url, "Qzxjvbwk") == sorted(TABLES)
        request = PurgeRequest(retention=parse_retention("90d"), actor="os:officer@host")
        result = purge_recordings(store, request, journal_folder=tmp_path, now=LATER)
    finally:
        store.dispose()

    assert result.total == 1
    assert all(table in result.reclaimed for table in TABLES), result.reclaimed
    assert tuples_holding(fresh_postgres_url, "Qzxjvbwk") == []
    # What no VACUUM removes: the write-ahead log (and its archive, replicas, backups).
    assert wal_holding(fresh_postgres_url, "Qzxjvbwk")
