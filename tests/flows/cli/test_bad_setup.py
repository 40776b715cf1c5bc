"""A setting a command cannot use at all is one `medasr: configuration error: ...` line and
exit 2 naming what to fix, never a traceback: a `.env` that is not text."""

from __future__ import annotations

from pathlib import Path

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
