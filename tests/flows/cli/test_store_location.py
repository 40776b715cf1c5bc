"""Where the store is: a relative SQLite URL resolved once, and every summary naming it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from config.settings import StorageSettings, load_settings
from flows.cli import app
from storage import open_store
from tests.helpers.review import Segment, add_transcribed


def test_a_relative_sqlite_url_is_resolved_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    monkeypatch.delenv("MEDASR_CONFIG", raising=False)
    monkeypatch.setenv("MEDASR_DATABASE_URL", "sqlite:///./try.db?timeout=5")
    monkeypatch.chdir(project)
    storage = load_settings().storage
    assert storage.database_url == f"sqlite:///{project / 'try.db'}?timeout=5"
    monkeypatch.chdir(elsewhere)  # a later step in another folder: the same store
    open_store(storage).dispose()
    assert (project / "try.db").exists()
    assert not (elsewhere / "try.db").exists()


@pytest.mark.parametrize(
    "url", ["sqlite://", "sqlite:///:memory:", "sqlite:///file:x?mode=memory&uri=true"]
)
def test_a_store_without_a_file_is_left_as_it_is(url: str) -> None:
    assert StorageSettings(database_url=url).database_url == url


def test_status_and_export_say_where_the_store_is(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEDASR_DATABASE_URL", "sqlite:///./try.db")
    store = open_store(StorageSettings(database_url=f"sqlite:///{tmp_path / 'try.db'}"))
    add_transcribed(store, str(tmp_path / "a.wav"), segments=[Segment(0, 9, "w")], flags=())
    store.dispose()
    where = f"store: {tmp_path / 'try.db'}"
    status = runner.invoke(app, ["status"])
    assert where in status.stderr.splitlines(), status.output
    export = runner.invoke(app, ["export", "--format", "jsonl", "--out", "x.jsonl"])
    assert where in export.stderr.splitlines(), export.output
    review = runner.invoke(app, ["review"])
    assert where in review.stderr.splitlines(), review.output
    purge = runner.invoke(app, ["purge", "--older-than", "90d", "--dry-run"])
    assert where in purge.stdout.splitlines(), purge.output
    os.chdir(tmp_path / "..")  # started elsewhere: the summary names the store it found
    nothing = runner.invoke(app, ["status"])
    assert f"store: {tmp_path.parent / 'try.db'}" in nothing.stderr, nothing.output
