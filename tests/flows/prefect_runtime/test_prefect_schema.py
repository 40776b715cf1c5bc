"""A temporary server whose database is at Prefect's newest schema starts without Alembic."""

from __future__ import annotations

import sqlite3
import subprocess
import time
from pathlib import Path

import httpx
import prefect
import pytest
from alembic.script import ScriptDirectory

from config.runtime import temporary_server_environment
from flows.prefect_runtime.prefect_schema import MIGRATE_ON_START, _newest_revision, skip_migrations
from flows.prefect_runtime.server_process import server_command
from tests.flows.prefect_server import PREFECT, free_port

MIGRATIONS = Path(prefect.__file__).parent / "server" / "database" / "_migrations"


def _database(home: Path, *revisions: str) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(home / "prefect.db") as connection:
        connection.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)")
        connection.executemany("INSERT INTO alembic_version VALUES (?)", [(r,) for r in revisions])
    connection.close()
    return home


def test_the_newest_revision_is_alembics_own_head() -> None:
    scripts = ScriptDirectory(
        str(MIGRATIONS), version_locations=[str(MIGRATIONS / "versions" / "sqlite")]
    )
    assert _newest_revision() == scripts.get_current_head()


def test_a_database_at_the_head_skips_the_upgrade(tmp_path: Path) -> None:
    home = _database(tmp_path / "home", str(_newest_revision()))
    assert skip_migrations({"PREFECT_HOME": str(home)}) == {MIGRATE_ON_START: "false"}


@pytest.mark.parametrize(
    ("revisions", "extra"),
    [
        (("9725c1cbee35",), {}),  # Prefect's first revision: an old database
        ((), {}),  # an empty version table
        (None, {}),  # no database yet
        ("head", {"PREFECT_API_DATABASE_CONNECTION_URL": "postgresql+asyncpg://db/prefect"}),
        ("head", {MIGRATE_ON_START: "true"}),  # the operator's own choice
    ],
    ids=["older", "empty", "missing", "another-database", "operator-choice"],
)
def test_anything_else_leaves_the_upgrade_on(tmp_path: Path, revisions, extra) -> None:
    home = tmp_path / "home"
    if revisions == "head":
        _database(home, str(_newest_revision()))
    elif revisions is not None:
        _database(home, *revisions)
    assert skip_migrations({"PREFECT_HOME": str(home), **extra}) == {}


def test_a_server_started_without_the_upgrade_serves_flow_runs(tmp_path: Path) -> None:
    home = tmp_path / "prefect-home"
    environment = temporary_server_environment({}) | {"PREFECT_HOME": str(home)}
    subprocess.run(
        [PREFECT, "server", "database", "upgrade", "-y"], env=environment, check=True,
        capture_output=True, timeout=300,
    )  # fmt: skip
    skipped = skip_migrations(environment)
    assert skipped == {MIGRATE_ON_START: "false"}
    port = free_port()
    server = subprocess.Popen(server_command(port), env=environment | skipped)
    try:
        url = f"http://127.0.0.1:{port}/api"
        with httpx.Client(timeout=5) as http:
            while server.poll() is None:
                try:
                    if http.get(f"{url}/health").status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.1)  # polling a socket that is not listening yet
            flow = http.post(f"{url}/flows/", json={"name": "schema-check"})
            assert flow.status_code in (200, 201), flow.text
            runs = http.post(f"{url}/flow_runs/filter", json={})
            assert runs.status_code == 200, runs.text
    finally:
        server.terminate()
        server.wait(timeout=30)
