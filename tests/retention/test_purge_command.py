"""`medasr purge` from the command line: exit codes, what it prints, and `medasr status`."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows.cli import app
from storage.interface import UnitOfWorkFactory
from tests.audit.tampering import run_sql
from tests.tasks.delivery.delivery_helpers import make_done

TEXTS = {"/ward/a.wav": "alpha words Zyxwvut", "/ward/b.wav": "bravo words Qwertyu"}


@pytest.fixture
def aged(store: UnitOfWorkFactory, sqlite_url: str) -> None:
    """Two done recordings that finished 200 days ago."""
    make_done(store, TEXTS)
    run_sql(sqlite_url, "UPDATE items SET done_at = '2000-01-01 00:00:00.000000'")


def test_a_dry_run_counts_and_changes_nothing(
    runner: CliRunner, aged: None, store: UnitOfWorkFactory
) -> None:
    result = runner.invoke(app, ["purge", "--older-than", "90d", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("would purge 2 recording(s) finished before ")
    with store.unit_of_work(read_only=True) as uow:
        assert {c.status for c in uow.item_queries.status_counts()} == {"done"}
        assert uow.audit.newest_event() is None


def test_a_purge_prints_counts_and_status_shows_the_retention(
    runner: CliRunner, aged: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEDASR_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("PREFECT_API_URL", "")
    result = runner.invoke(app, ["purge", "--older-than", "12w", "--language", "en-IN"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("purged 2 recording(s) finished before ")
    assert "  en-IN\tdone\t2" in lines
    assert any(line.startswith("receipts in the audit trail: 1; digest ") for line in lines)
    assert "prefect: no Prefect server configured" in result.stdout
    assert "Zyxwvut" not in result.output
    status = runner.invoke(app, ["status"])
    assert status.exit_code == 0
    assert "en-IN\tpurged\t2" in status.stdout
    assert "purged recordings: 2; retention in force: 12w (last purge " in status.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--older-than", "soon"], "90d, 12w or 1y"),
        (["--older-than", "90d", "--language", "xx"], "unsupported language"),
    ],
)
def test_bad_options_exit_2_with_a_sentence(
    runner: CliRunner, aged: None, args: list[str], message: str
) -> None:
    result = runner.invoke(app, ["purge", *args])
    assert result.exit_code == 2
    assert message in result.stderr


def test_no_database_is_exit_2(runner: CliRunner) -> None:
    result = runner.invoke(app, ["purge", "--older-than", "90d"])
    assert result.exit_code == 2
    assert "nothing to purge" in result.stderr
