"""An export and its `exported` audit event exist together or not at all: when the event
cannot be written (another writer holds the store: the SQLite lock), the files written
are removed and the command says so (exit 1)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from config.settings import StorageSettings
from flows.cli import app
from storage import open_store
from storage.audit_records import AuditFilter
from storage.sources import SourceFile

LANG = "en-IN"


def _fill(tmp_path: Path) -> None:
    store = open_store(StorageSettings(database_url=f"sqlite:///{tmp_path / 'medasr.db'}"))
    uris = [str(tmp_path / "archive" / f"{n}.wav") for n in ("a", "b")]
    with store.unit_of_work() as uow:
        uow.items.register_items([SourceFile(u, 10, "v1") for u in uris], language=LANG)
    with store.unit_of_work() as uow:
        claimed = uow.claims.claim_batch(owner="w", language=None, limit=9, lease_s=60)
    with store.unit_of_work() as uow:
        for item in claimed:
            uow.claims.finish_item(item.id, lease_token=item.lease_token, text="Zyxwvut words",
                                   duration_ms=1000, chunk_count=1, extras={})  # fmt: skip
    store.dispose()


def _exported_events(tmp_path: Path) -> int:
    store = open_store(StorageSettings(database_url=f"sqlite:///{tmp_path / 'medasr.db'}"))
    try:
        with store.unit_of_work(read_only=True) as uow:
            return sum(1 for e in uow.audit.events(AuditFilter(action="exported")))
    finally:
        store.dispose()


@pytest.mark.parametrize("export_format", ["jsonl", "csv", "txt"])
def test_an_export_whose_event_cannot_be_written_leaves_no_file(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, export_format: str
) -> None:
    _fill(tmp_path)
    monkeypatch.setenv("MEDASR_STORAGE__BUSY_TIMEOUT_MS", "300")
    monkeypatch.setenv("MEDASR_STORAGE__STORE_RETRY_S", "0")
    out = tmp_path / "out" / ("notes" if export_format == "txt" else f"notes.{export_format}")
    writer = sqlite3.connect(tmp_path / "medasr.db", isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")  # another writer holds the store
        result = runner.invoke(app, ["export", "--format", export_format, "--out", str(out)])
    finally:
        writer.close()
    assert result.exit_code != 0
    left = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert left == []
    assert _exported_events(tmp_path) == 0
    assert "removed" in result.output


def test_an_export_and_its_event_are_both_there_when_the_store_answers(
    runner: CliRunner, tmp_path: Path
) -> None:
    _fill(tmp_path)
    out = tmp_path / "out" / "notes.jsonl"
    result = runner.invoke(app, ["export", "--format", "jsonl", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert out.is_file()
    assert _exported_events(tmp_path) == 1
