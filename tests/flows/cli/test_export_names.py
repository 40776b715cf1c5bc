"""`medasr export --format txt`: what is final by default, and names that stay each
recording's own from one export to the next."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from config.settings import StorageSettings
from flows.cli import app
from storage import open_review_store
from storage.review_interface import ReviewStore
from tests.helpers.review import Segment, add_transcribed


def store_at(sqlite_url: str) -> ReviewStore:
    return open_review_store(StorageSettings(database_url=sqlite_url))


def finished(store: ReviewStore, uri: str, text: str, *, review: bool = False) -> int:
    """A recording transcribed with `text`; flagged for review or done."""
    flags = ("repetition",) if review else ()
    return add_transcribed(store, uri, segments=[Segment(0, 1000, text)], flags=flags)


def exported(runner: CliRunner, out: Path, *options: str) -> dict[str, str]:
    result = runner.invoke(app, ["export", "--format", "txt", "--out", str(out), *options])
    assert result.exit_code == 0, result.output
    return {
        p.relative_to(out).as_posix(): p.read_text(encoding="utf-8")
        for p in sorted(out.rglob("*.txt"))
    }


def test_txt_exports_only_final_transcripts_unless_asked(
    runner: CliRunner, sqlite_url: str, tmp_path: Path
) -> None:
    store = store_at(sqlite_url)
    finished(store, str(tmp_path / "ward" / "signed.wav"), "final words")
    finished(store, str(tmp_path / "ward" / "waiting.wav"), "machine words", review=True)
    store.dispose()
    assert exported(runner, tmp_path / "out") == {"signed.txt": "final words\n"}
    result = runner.invoke(app, ["export", "--format", "txt", "--out", str(tmp_path / "o2")])
    assert "1 waiting for review not exported" in result.stderr
    waiting = exported(runner, tmp_path / "review", "--status", "needs_review")
    assert waiting == {"waiting.txt": "machine words\n"}


def test_a_new_recording_never_takes_another_ones_export_name(
    runner: CliRunner, sqlite_url: str, tmp_path: Path
) -> None:
    store = store_at(sqlite_url)
    finished(store, str(tmp_path / "formats" / "wardround.opus"), "opus words")
    finished(store, str(tmp_path / "formats" / "other.wav"), "other words")
    first = exported(runner, tmp_path / "out")
    assert first["wardround.txt"] == "opus words\n"
    finished(store, str(tmp_path / "formats" / "wardround.mp3"), "mp3 words")
    finished(store, str(tmp_path / "formats" / "WARDROUND.wav"), "upper words")
    store.dispose()
    second = exported(runner, tmp_path / "out2")
    assert second.get("wardround.txt") == "opus words\n", second
    assert second.get("other.txt") == "other words\n"
    assert sorted(second.values()) == [
        "mp3 words\n", "opus words\n", "other words\n", "upper words\n"
    ]  # fmt: skip
    assert exported(runner, tmp_path / "out") == second  # the first export's files, updated
