"""What a purge leaves of a recording's text (transcript, chunk, a reviewer's revision) in
the database's files: nothing on SQLite; on PostgreSQL every table it changed is
VACUUMed, and the write-ahead log keeps it (docs/audit.md "Really gone" says the same)."""

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
from tests.retention.test_purge_store import add_chunk, deliver_rows
from tests.tasks.delivery.delivery_helpers import make_done

LATER = datetime.now(UTC) + timedelta(days=100)
NOTE = "patient Qzxjvbwk Plorfnug takes warfarin"
TABLES = ("items", "chunks", "deliveries", "revisions")
_REL = "CAST(:t AS regclass)"


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


def table_files(url: str) -> dict[str, list[Path]]:
    """Each purged table's files on disk (heap, TOAST, indexes), after a CHECKPOINT."""
    engine = create_engine(normalize_database_url(url), isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as connection:
            connection.execute(sql("CHECKPOINT"))
            data = Path(connection.execute(sql("SHOW data_directory")).scalar_one())
            files: dict[str, list[Path]] = {}
            for table in TABLES:
                relations = connection.execute(
                    sql(
                        f"SELECT pg_relation_filepath(c.oid) FROM pg_class c WHERE c.oid = {_REL}"
                        f" OR c.oid = (SELECT reltoastrelid FROM pg_class WHERE oid = {_REL})"
                        f" OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = {_REL})"
                    ),
                    {"t": table},
                ).scalars()
                files[table] = [
                    p for r in relations if r for p in data.glob(r + "*") if p.is_file()
                ]
            return files
    finally:
        engine.dispose()


def holding(files: dict[str, list[Path]], needle: str) -> list[str]:
    return [t for t, paths in files.items() for p in paths if needle.encode() in p.read_bytes()]


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
    """One delivered recording whose text is also in a chunk and a reviewer's draft."""
    items = make_done(store, {"/ward/a.wav": NOTE})
    a = items["/ward/a.wav"].id
    add_chunk(url, a, NOTE)
    add_revision(url, a, NOTE)
    deliver_rows(store, {a: "delivered"})


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
def test_a_purge_vacuums_every_table_it_changed_and_the_wal_keeps_the_text(
    fresh_postgres_url: str, tmp_path: Path
) -> None:
    store = open_store(StorageSettings(database_url=fresh_postgres_url), upgrade=True)
    try:
        arrange(fresh_postgres_url, store)
        assert set(holding(table_files(fresh_postgres_url), "Qzxjvbwk")) == {
            "items", "chunks", "revisions"
        }  # fmt: skip
        request = PurgeRequest(retention=parse_retention("90d"), actor="os:officer@host")
        result = purge_recordings(store, request, journal_folder=tmp_path, now=LATER)
    finally:
        store.dispose()

    assert result.total == 1
    assert all(table in result.reclaimed for table in TABLES), result.reclaimed
    # Here VACUUM leaves no purged row in the tables' pages (emptied pages at a table's
    # end are cut off, the rest compacted). In general the bytes of a dead row stay in a
    # page's free space until a new row reuses it: docs/audit.md says so.
    assert holding(table_files(fresh_postgres_url), "Qzxjvbwk") == []
    # What no VACUUM removes: the write-ahead log (and its archive, replicas, backups).
    assert wal_holding(fresh_postgres_url, "Qzxjvbwk")
