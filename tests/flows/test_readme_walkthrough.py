"""The README's "Try it on your own folder" walkthrough works as written on a folder with
no manifest: its `deliver` lines do not stop at the patient-link check."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from config.settings import StorageSettings
from flows.cli import app
from storage import open_store
from tests.tasks.delivery.delivery_helpers import make_done

README = Path(__file__).resolve().parents[2] / "README.md"


def walkthrough_commands() -> list[list[str]]:
    """The `.venv/bin/medasr ...` lines of the section's code blocks, comments cut off."""
    text = README.read_text(encoding="utf-8")
    section = text.split("## Try it on your own folder", 1)[1].split("\n## ", 1)[0]
    lines = re.findall(r"^\.venv/bin/medasr (.+)$", section, re.M)
    return [shlex.split(line.split("  #", 1)[0]) for line in lines]


def test_the_walkthrough_delivers_a_folder_without_a_manifest(
    runner: CliRunner, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEDASR_BASE_URL", "http://127.0.0.1:9")  # the dry run sends nothing
    monkeypatch.setenv("MEDASR_TOKEN", "walkthrough-token")
    store = open_store(StorageSettings(database_url=sqlite_url))
    make_done(store, {"/home/me/my-dictations/a.wav": "a note"})  # no manifest, no patient
    store.dispose()
    delivers = [args for args in walkthrough_commands() if args[0] == "deliver"]
    assert delivers, walkthrough_commands()

    dry_runs = [args for args in delivers if "--dry-run" in args]
    assert dry_runs, delivers
    for args in dry_runs:
        result = runner.invoke(app, args)
        assert result.exit_code == 0, (args, result.output)
    for args in delivers:  # the real one takes the same switches as its dry run
        assert set(args) - {"--dry-run"} == set(dry_runs[0]) - {"--dry-run"}, delivers
