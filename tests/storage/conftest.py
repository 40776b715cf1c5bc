"""Store fixtures: the same repository suite runs on SQLite and on a real PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from config.settings import StorageSettings
from storage import clock, open_store
from storage.interface import UnitOfWorkFactory
from tests.helpers.sqlite_template import copy_template
from tests.helpers.stores import store_on_both_backends  # noqa: F401 (the `store` fixture)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty database URL: an SQLite file, or a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'medasr.db'}"
    return str(request.getfixturevalue("fresh_postgres_url"))


@pytest.fixture
def sqlite_reference(sqlite_template: Path, tmp_path: Path) -> Iterator[UnitOfWorkFactory]:
    """A second store, on SQLite, beside `store`: a scenario run on both must read alike,
    so the two backends cannot drift apart."""
    opened = open_store(
        StorageSettings(database_url=copy_template(sqlite_template, tmp_path / "reference.db"))
    )
    try:
        yield opened
    finally:
        opened.dispose()


@pytest.fixture
def host_clock_an_hour_ahead(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process's wall clock runs an hour fast (as a misconfigured host's would).

    storage.clock is the one place every storage module reads this host's clock."""

    def ahead() -> datetime:
        return datetime.now(UTC) + timedelta(hours=1)

    monkeypatch.setattr(clock, "host_now", ahead)
