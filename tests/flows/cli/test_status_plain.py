"""`medasr status` without a terminal: each section of rows has its column header."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from flows.cli import app
from tests.flows.cli.test_store import fill

FAILURE_HEADER = "source\tlanguage\terror_kind\tattempts\tretry\tmessage"


def test_failure_rows_come_under_a_header(runner: CliRunner, tmp_path: Path) -> None:
    fill(tmp_path, {str(tmp_path / "a" / "bad.wav"): ""}, message="not an audio file")
    result = runner.invoke(app, ["status"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    at = lines.index("latest failures:")
    assert lines[at + 1] == FAILURE_HEADER
    assert lines[at + 2].split("\t")[0] == str(tmp_path / "a" / "bad.wav")
    assert len(lines[at + 2].split("\t")) == len(FAILURE_HEADER.split("\t"))
