"""A database that holds tables but no medasr schema is refused and left as it is.

MEDASR_DATABASE_URL pointed at the wrong file (another program's SQLite, a half-made
store) must not have medasr's schema added to it by `medasr status`, nor end on a
statement the migration could not run ("table items already exists").
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows.cli import app


def tables(path: Path) -> list[str]:
    with closing(sqlite3.connect(path)) as db:
        return sorted(r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'"))


@pytest.mark.parametrize(
    ("made", "held"),
    [
        ("CREATE TABLE foo (x)", "foo"),  # another program's database
        ("CREATE TABLE items (id INTEGER PRIMARY KEY)", "items"),  # no alembic_version
    ],
)
@pytest.mark.parametrize("command", [["status"], ["export", "--format", "jsonl", "--out", "o"]])
def test_a_database_of_other_tables_is_refused_and_left_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, made: str, held: str, command: list[str]
) -> None:
    path = tmp_path / "other.db"
    with closing(sqlite3.connect(path)) as db:
        db.execute(made)
        db.commit()
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MEDASR_CONFIG", raising=False)
    monkeypatch.setenv("MEDASR_DATABASE_URL", f"sqlite:///{path}")

    result = CliRunner().invoke(app, command)

    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines()[0] == (
        f"medasr: configuration error: MEDASR_DATABASE_URL names a database that holds other "
        f"tables ({held}) and no medasr schema; nothing was changed: name a medasr store or "
        "an empty database"
    )
    assert tables(path) == [held]
