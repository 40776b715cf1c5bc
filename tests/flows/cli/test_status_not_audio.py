"""`medasr status` lists the files a source's latest listing ignored as not audio, by name
relative to the source; the names go when the files leave the source or a purge runs."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from pathlib import Path

from typer.testing import CliRunner

from config.settings import StorageSettings
from flows.cli import app
from flows.cli.purge import result_lines
from storage import open_store
from storage.interface import UnitOfWorkFactory
from tasks.discovery.discover import discover_and_register
from tasks.retention.durations import parse_retention
from tasks.retention.purge import PurgeRequest, PurgeResult, purge_recordings
from tests.reliability.evidence import query

LANG = "en-IN"
SIDECARS = [f"sidecar-{i:02d}.txt" for i in range(25)]


def make_archive(root: Path) -> Path:
    """One recording, three named not-audio files and 25 sidecar notes, all settled."""
    for name in ("a.wav", "notes.txt", "scans/form Müller 1.jpg", "x.wav.part", *SIDECARS):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"RIFF" if name.endswith(".wav") else b"text")
    old = time.time() - 3600
    for path in root.rglob("*"):
        os.utime(path, (old, old))
    return root


def listed(store: UnitOfWorkFactory, root: Path) -> None:
    discover_and_register(source=str(root), language=LANG, store=store, settle_s=0)


def not_audio_lines(runner: CliRunner) -> list[str]:
    """The not-audio header line of `medasr status` and the indented names under it."""
    result = runner.invoke(app, ["status"])
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    heads = [i for i, line in enumerate(lines) if line.startswith("not audio")]
    if not heads:
        return []
    names = []
    for line in lines[heads[0] + 1 :]:
        if not line.startswith("  "):
            break
        names.append(line)
    return [lines[heads[0]], *names]


def test_status_names_the_files_ignored_as_not_audio_relative_to_the_source(
    runner: CliRunner, sqlite_url: str, tmp_path: Path
) -> None:
    root = make_archive(tmp_path / "archive")
    store = open_store(StorageSettings(database_url=sqlite_url))
    listed(store, root)  # no run row: a listing alone is enough
    store.dispose()

    lines = not_audio_lines(runner)

    assert lines[0].startswith("not audio, ignored: 28 ("), lines
    assert ".txt file: 26" in lines[0]
    assert "a temporary or partial copy (.part): 1" in lines[0]
    assert "documents, data, images" in lines[0]
    shown = [line.strip() for line in lines[1:]]
    # URI order, the first 20, then how many more
    assert shown[:3] == ["notes.txt", "scans/form Müller 1.jpg", "sidecar-00.txt"]
    assert len(shown) == 21
    assert shown[-1] == "and 8 more"
    assert not any(str(tmp_path) in line for line in lines)


def test_a_file_gone_from_the_source_is_gone_from_status(
    runner: CliRunner, sqlite_url: str, tmp_path: Path
) -> None:
    root = make_archive(tmp_path / "archive")
    store = open_store(StorageSettings(database_url=sqlite_url))
    listed(store, root)
    (root / "notes.txt").unlink()
    for name in SIDECARS:
        (root / name).unlink()
    listed(store, root)
    store.dispose()

    lines = not_audio_lines(runner)

    assert lines[0].startswith("not audio, ignored: 2 ("), lines
    assert [line.strip() for line in lines[1:]] == ["scans/form Müller 1.jpg", "x.wav.part"]
    names = [r["name"] for r in query(sqlite_url, "SELECT name FROM not_audio_files")]
    assert sorted(names) == ["scans/form Müller 1.jpg", "x.wav.part"]


def test_a_purge_removes_the_names_of_files_ignored_as_not_audio(
    runner: CliRunner, sqlite_url: str, tmp_path: Path
) -> None:
    root = make_archive(tmp_path / "archive")
    store = open_store(StorageSettings(database_url=sqlite_url))
    listed(store, root)
    request = PurgeRequest(retention=parse_retention("90d"), actor="test")
    result = purge_recordings(store, request, journal_folder=tmp_path / "journal")
    store.dispose()

    assert result.not_audio_names == 20
    assert query(sqlite_url, "SELECT name FROM not_audio_files") == []
    assert not any(line.startswith("not audio") for line in not_audio_lines(runner))


def test_a_dry_run_purge_keeps_the_names(
    runner: CliRunner, sqlite_url: str, tmp_path: Path
) -> None:
    root = make_archive(tmp_path / "archive")
    store = open_store(StorageSettings(database_url=sqlite_url))
    listed(store, root)
    request = PurgeRequest(retention=parse_retention("90d"), actor="test", dry_run=True)
    purge_recordings(store, request, journal_folder=tmp_path / "journal")
    store.dispose()

    assert len(query(sqlite_url, "SELECT name FROM not_audio_files")) == 20


def test_the_purge_says_how_many_names_it_removed() -> None:
    request = PurgeRequest(retention=parse_retention("90d"), actor="test")
    result = PurgeResult(cutoff=datetime(2026, 1, 1, tzinfo=UTC), not_audio_names=3)
    lines = result_lines(result, request)
    assert "names of files ignored as not audio removed: 3" in lines[-1]
    dry = PurgeRequest(retention=parse_retention("90d"), actor="test", dry_run=True)
    assert not any("not audio" in line for line in result_lines(result, dry))
