"""The audit wing's tests run on SQLite and on a real PostgreSQL, like the store's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from config.settings import StorageSettings
from storage import open_store
from storage.interface import UnitOfWorkFactory
from tests.helpers.sqlite_template import copy_template


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def audit_store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A database at the newest schema with no rows: an SQLite file, or PostgreSQL."""
    if request.param == "sqlite":  # a copy of this worker's migrated template
        return copy_template(request.getfixturevalue("sqlite_template"), tmp_path / "medasr.db")
    return str(request.getfixturevalue("postgres_store_url"))


@pytest.fixture
def audit_store(audit_store_url: str) -> Iterator[UnitOfWorkFactory]:
    """The opened store of `audit_store_url`."""
    opened = open_store(StorageSettings(database_url=audit_store_url), upgrade=True)
    try:
        yield opened
    finally:
        opened.dispose()
