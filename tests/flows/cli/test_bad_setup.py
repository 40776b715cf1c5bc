"""A setting a command cannot use at all is one `medasr: configuration error: ...` line and
exit 2 naming what to fix, never a traceback: a `.env` that is not text, a bucket URL
without its bucket."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from config.errors import EXIT_USAGE
from flows.cli import app


def test_a_dotenv_that_is_not_utf8_names_the_file(runner: CliRunner, tmp_path: Path) -> None:
    (tmp_path / ".env").write_bytes(b"\xff\xfe=1\n")
    result = runner.invoke(app, ["status"])
    assert result.exit_code == EXIT_USAGE, result.output
    assert result.stderr.splitlines() == [
        f"medasr: configuration error: .env: {tmp_path / '.env'} is not UTF-8 text"
    ]


@pytest.mark.parametrize("source", ["s3://", "s3:///", "S3:///recordings"])
@pytest.mark.parametrize("dry_run", [["--dry-run"], []], ids=["dry-run", "run"])
def test_a_bucket_url_without_a_bucket_is_refused(
    runner: CliRunner, monkeypatch: pytest.MonkeyPatch, source: str, dry_run: list[str]
) -> None:
    monkeypatch.setenv("MEDASR_TOKEN", "t")
    result = runner.invoke(app, ["run", source, "-l", "en-IN", *dry_run])
    assert result.exit_code == EXIT_USAGE, result.output
    assert result.stderr.splitlines() == [
        f"medasr: configuration error: {source} names no bucket: "
        "give the bucket to read, as s3://BUCKET or s3://BUCKET/FOLDER"
    ]
