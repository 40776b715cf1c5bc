"""Shared fixtures: real local servers (devserver, PostgreSQL, S3, Prefect) live in plugin modules.

Here: `clean_environment` (autouse: no MEDASR_* from outside, no stray .env; a test's
own settings come from monkeypatch or its arguments), `_cheap_argon2` (autouse: reviewer
passwords hashed at argon2id's least cost unless a test asks for `production_argon2`),
`sqlite_url` and `store` (an SQLite store under tmp_path, copied from a migrated
template made once per worker; tests/storage overrides `store` with both backends), and
`runner` (Typer's CliRunner pointed at that database).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from argon2 import PasswordHasher
from typer.testing import CliRunner

from config.runtime import prepare_prefect_environment
from config.settings import StorageSettings
from storage import open_store
from storage.interface import UnitOfWorkFactory
from tasks.review import accounts

pytest_plugins = [
    "tests.servers",
    "tests.storage_servers",
    "tests.prefect_servers",
    "tests.helpers.sqlite_template",
]

TEST_SWITCHES = "MEDASR_TEST_"  # the suite's own settings (tests/storage_servers.py)


def pytest_configure(config: pytest.Config) -> None:
    """The suite runs flows in this process as the command would: with medasr's Prefect
    defaults, set here as the command's `main` sets them (importing sets nothing)."""
    prepare_prefect_environment()


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No MEDASR_* from the outside, and a working directory without a .env file.

    Every test gets it: a variable in a developer's shell must not change an outcome.
    The suite's own switches (MEDASR_TEST_*, read by session fixtures) stay.
    """
    for name in list(os.environ):
        if name.startswith("MEDASR_") and not name.startswith(TEST_SWITCHES):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


# argon2-cffi's defaults (RFC 9106's low-memory profile: 3 passes over 64 MiB) take 1-2 s
# a hash on a busy 2-core host, and a workstation test hashes three accounts and verifies
# every sign-in. Tests hash with the least cost argon2id allows; what they judge (an
# argon2id hash, the lockout, the throttle) does not depend on the cost. A test that
# requests `production_argon2` hashes with medasr's own hasher.
CHEAP_ARGON2 = PasswordHasher(time_cost=1, memory_cost=8, parallelism=1)


@pytest.fixture
def production_argon2() -> None:
    """Marks a test that hashes passwords with medasr's production argon2 parameters."""


@pytest.fixture(autouse=True)
def _cheap_argon2(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if "production_argon2" in request.fixturenames:
        return
    monkeypatch.setattr(accounts, "_HASHER", CHEAP_ARGON2)
    monkeypatch.setattr(accounts, "_DUMMY_HASH", CHEAP_ARGON2.hash("not a password of anyone"))


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """The URL of an SQLite file (not created yet) under tmp_path."""
    return f"sqlite:///{tmp_path / 'medasr.db'}"


@pytest.fixture
def store(migrated_sqlite_url: str) -> Iterator[UnitOfWorkFactory]:
    """An opened SQLite store at the newest schema with no rows, at `sqlite_url` (a copy of
    this worker's migrated template: tests/helpers/sqlite_template.py)."""
    opened = open_store(StorageSettings(database_url=migrated_sqlite_url))
    yield opened
    opened.dispose()


@pytest.fixture
def runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sqlite_url: str) -> CliRunner:
    """Typer's CliRunner in tmp_path (no stray .env) with MEDASR_DATABASE_URL = `sqlite_url`."""
    monkeypatch.chdir(tmp_path)  # relative paths land here
    monkeypatch.delenv("MEDASR_CONFIG", raising=False)
    monkeypatch.setenv("MEDASR_DATABASE_URL", sqlite_url)
    return CliRunner()
