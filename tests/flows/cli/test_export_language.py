"""`medasr export --language`: a mixed archive exported one language at a time, in every
format, and a code the service does not take refused before anything is written."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from config.settings import StorageSettings
from flows.cli import app
from storage import open_store
from tests.tasks.delivery.delivery_helpers import make_done


@pytest.fixture
def mixed(sqlite_url: str, tmp_path: Path) -> Path:
    """Two recordings in Hindi, one in English, all done."""
    store = open_store(StorageSettings(database_url=sqlite_url))
    hindi = {str(tmp_path / "ward" / f"hi-{n}.wav"): f"hindi note {n}" for n in (1, 2)}
    make_done(store, hindi, language="hi")
    make_done(store, {str(tmp_path / "ward" / "en-1.wav"): "english note"}, language="en-IN")
    store.dispose()
    return tmp_path


def _export(runner: CliRunner, fmt: str, out: Path, *options: str):
    return runner.invoke(app, ["export", "--format", fmt, "--out", str(out), *options])


def test_every_format_exports_only_the_language_asked(runner: CliRunner, mixed: Path) -> None:
    result = _export(runner, "jsonl", mixed / "hi.jsonl", "--language", "hi")
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in (mixed / "hi.jsonl").read_text().splitlines()]
    assert sorted(r["language"] for r in rows) == ["hi", "hi"]
    result = _export(runner, "csv", mixed / "en.csv", "-l", "en-IN")
    assert result.exit_code == 0, result.output
    with (mixed / "en.csv").open(newline="", encoding="utf-8") as handle:
        assert [r["language"] for r in csv.DictReader(handle)] == ["en-IN"]
    result = _export(runner, "txt", mixed / "txt", "-l", "hi")
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (mixed / "txt").rglob("*.txt")) == ["hi-1.txt", "hi-2.txt"]
    result = _export(runner, "fhir", mixed / "hi.json", "-l", "hi")
    assert result.exit_code == 0, result.output
    bundle = json.loads((mixed / "hi.json").read_text())
    assert len(bundle["entry"]) == 2
    assert "exported 2 item(s)" in result.stderr


def test_a_language_the_service_does_not_take_writes_nothing(
    runner: CliRunner, mixed: Path
) -> None:
    result = _export(runner, "jsonl", mixed / "xx.jsonl", "--language", "xx")
    assert result.exit_code == 2, result.output
    assert "language" in result.output
    assert not (mixed / "xx.jsonl").exists()
