"""The store fixture of the storage suite: the same tests on SQLite and on PostgreSQL.

Import `store_on_both_backends` into a conftest or a test module to get it as `store`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from config.settings import StorageSettings
from storage import open_store
from storage.interface import UnitOfWorkFactory
from tests.helpers.sqlite_template import copy_template


@pytest.fixture(
    name="store",
    params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)],
)
def store_on_both_backends(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[UnitOfWorkFactory]:
    """An opened store at the newest schema with no rows: SQLite file or PostgreSQL."""
    if request.param == "sqlite":
        url = copy_template(request.getfixturevalue("sqlite_template"), tmp_path / "medasr.db")
    else:
        url = str(request.getfixturevalue("postgres_store_url"))
    opened = open_store(StorageSettings(database_url=url), upgrade=True)
    try:
        yield opened
    finally:
        opened.dispose()
