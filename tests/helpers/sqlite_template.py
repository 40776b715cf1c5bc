"""A migrated SQLite store made once per worker and copied for each test.

Running Alembic from an empty file costs 0.5-1.3 s a test on a busy 2-core host; copying
the migrated file costs milliseconds. A copy is what opening a fresh file would make:
mode 0600 (as storage.database creates it), the newest schema, no rows, and a store
identity of its own (migration 0011 draws a random one per store; the copy draws again).
Tests whose subject is creating or migrating a database keep an empty URL (`sqlite_url`).
"""

from __future__ import annotations

import os
import secrets
import sqlite3
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

import pytest

from config.settings import StorageSettings
from storage import open_store

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"  # the alphabet of migration 0011's store_id


def make_template(path: Path) -> Path:
    """Create and migrate an SQLite store at `path`, its write-ahead log folded in."""
    open_store(StorageSettings(database_url=f"sqlite:///{path}")).dispose()
    with closing(sqlite3.connect(path)) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path


def copy_template(template: Path, path: Path) -> str:
    """Copy `template` to `path` (which must not exist) as a new store; returns its URL."""
    descriptor = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    with os.fdopen(descriptor, "wb") as copy:
        copy.write(template.read_bytes())
    store_id = "".join(secrets.choice(_CROCKFORD) for _ in range(8))
    with closing(sqlite3.connect(path)) as connection, connection:
        connection.execute(
            "UPDATE store_identity SET store_id = ?, created_at = ?",
            (store_id, datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")),
        )
    return f"sqlite:///{path}"


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This worker's migrated, empty SQLite store (copy it with `copy_template`)."""
    return make_template(tmp_path_factory.mktemp("sqlite-template") / "medasr.db")


@pytest.fixture
def migrated_sqlite_url(sqlite_url: str, sqlite_template: Path) -> str:
    """`sqlite_url`, made a new store at the newest schema with no rows (a template copy)."""
    return copy_template(sqlite_template, Path(sqlite_url.removeprefix("sqlite:///")))
