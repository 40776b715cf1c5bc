"""Prefect fixtures shared by every suite (a pytest plugin, registered in tests/conftest.py).

- `prefect_template`: a PREFECT_HOME migrated once per session (copied where one is needed).
- `shared_prefect_server`: one `prefect server start` per session (so per xdist worker),
  started from a copy of the template; its guard against failing Prefect services runs when
  it stops, at the end of the session.
- `prefect_api`: {"PREFECT_API_URL": ...} of that server. A `medasr` subprocess whose test is
  not about Prefect's temporary server (its start, lifetime, clean-up or PREFECT_HOME)
  gets it in its environment and so skips that start: most of a short run's time.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.flows.prefect_server import PrefectServer, migrate_prefect_home, running_prefect_server


@pytest.fixture(scope="session")
def prefect_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("prefect-template")
    migrate_prefect_home(home)
    return home


@pytest.fixture(scope="session")
def shared_prefect_server(
    prefect_template: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PrefectServer]:
    home = tmp_path_factory.mktemp("prefect-api")
    shutil.copytree(prefect_template, home, dirs_exist_ok=True)  # starts without migrating
    with running_prefect_server(home) as server:
        yield server


@pytest.fixture(scope="session")
def prefect_api(shared_prefect_server: PrefectServer) -> dict[str, str]:
    return {"PREFECT_API_URL": shared_prefect_server.api_url}
