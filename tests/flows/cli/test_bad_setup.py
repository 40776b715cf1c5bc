"""A setting a command cannot use at all is one `medasr: configuration error: ...` line and
exit 2 naming what to fix, never a traceback: a `.env` that is not text, a bucket URL
without its bucket, demo options, a store file that is not a database."""

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


@pytest.mark.parametrize(
    ("options", "line"),
    [
        ([], "medasr: usage error: --samples: source not found: {tmp}/samples"),
        (
            ["--samples", "{tmp}/nonexist"],
            "medasr: usage error: --samples: source not found: {tmp}/nonexist",
        ),
        (
            ["--samples", "{tmp}", "-l", "xx"],
            "medasr: configuration error: unsupported language 'xx'; use one of: ",
        ),
    ],
    ids=["default-samples-elsewhere", "samples-not-there", "unknown-language"],
)
def test_demo_options_are_checked_before_anything_starts(
    runner: CliRunner, tmp_path: Path, options: list[str], line: str
) -> None:
    workdir = tmp_path / "demo-here"
    given = [option.format(tmp=tmp_path) for option in options]
    result = runner.invoke(app, ["demo", "--workdir", str(workdir), *given])
    assert result.exit_code == EXIT_USAGE, result.output
    [printed] = result.stderr.splitlines()
    assert printed.startswith(line.format(tmp=tmp_path)), printed
    assert result.stdout == ""
    assert not workdir.exists()  # nothing started, nothing made


@pytest.mark.parametrize(
    "command",
    [
        ["status"],
        ["export", "--format", "csv", "--out", "x.csv"],
        ["audit"],
        ["review"],
        ["db", "upgrade"],
    ],
    ids=["status", "export", "audit", "review", "db-upgrade"],
)
def test_a_store_file_that_is_not_a_database_names_the_variable_and_the_file(
    runner: CliRunner, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, command: list[str]
) -> None:
    # As `medasr run` says it: exit 2, the setting is what to fix.
    not_a_database = tmp_path / "notadb.db"
    not_a_database.write_text("text\n")
    monkeypatch.setenv("MEDASR_DATABASE_URL", f"sqlite:///{not_a_database}")
    result = runner.invoke(app, command)
    assert result.exit_code == EXIT_USAGE, result.output
    assert result.stderr.splitlines() == [
        f"medasr: configuration error: MEDASR_DATABASE_URL: {not_a_database} is not an SQLite "
        "database: point MEDASR_DATABASE_URL at medasr's database, or move the file away"
    ]
    assert not_a_database.read_text() == "text\n"


@pytest.mark.parametrize("source", ["http://example.com/x", "HTTPS://records.example/dictation/"])
@pytest.mark.parametrize("dry_run", [[], ["--dry-run"]], ids=["run", "dry-run"])
def test_a_web_address_is_refused_as_a_source(
    runner: CliRunner, monkeypatch: pytest.MonkeyPatch, source: str, dry_run: list[str]
) -> None:
    """A web address has no folder to walk: fsspec's http filesystem failed on it as an
    unreadable source (exit 1, "InvalidUrlClientError"), and the run went no further."""
    monkeypatch.setenv("MEDASR_TOKEN", "t")
    result = runner.invoke(app, ["run", source, "-l", "en-IN", *dry_run])
    assert result.exit_code == EXIT_USAGE, result.output
    scheme = source.split(":", 1)[0].lower()
    assert result.stderr.splitlines() == [
        f"medasr: configuration error: {scheme}:// is not a source medasr can walk (a web "
        "address has no folders to list): name a local folder or a bucket (s3://, gs://, az://)"
    ]
