"""A mixed-language archive in one run: the manifest's `language` column sets each
recording's language, sent as `?language=` to the devserver (read from its ledger); a
value the service does not take fails that recording alone (metadata_invalid)."""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import soundfile
from typer.testing import CliRunner

from config.settings import Settings, pinned_settings
from devserver import RunningDevServer
from devserver.tone import encode_tone_dictation
from flows.cli import app
from storage import open_store
from tests.helpers.cli import table_rows

LANGUAGES = {
    "ward1/a.wav": "en-IN",
    "ward1/b.wav": "hi",
    "ward2/c.wav": "ta",
    "ward2/d.wav": "mr",
}


def write_archive(root: Path, languages: dict[str, str], *, extra: dict[str, str]) -> None:
    for i, name in enumerate([*languages, *extra]):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        text = f"note {i} patient reviewed in ward today."
        soundfile.write(root / name, encode_tone_dictation(text), 16_000, subtype="PCM_16")
    with (root / "medasr.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["path", "language", "department"])
        for name, language in {**languages, **extra}.items():
            writer.writerow([name, language, "medicine"])


def items(settings: Settings, root: Path) -> dict[tuple[str, str], Any]:
    store = open_store(settings.storage)
    try:
        with store.unit_of_work(read_only=True) as uow:
            return {
                (Path(r.source).relative_to(root).as_posix(), r.language): r
                for r in uow.item_queries.export_rows()
            }
    finally:
        store.dispose()


def sent_languages(server: RunningDevServer) -> Counter[str | None]:
    return Counter(e.language for e in server.ledger.entries() if e.bytes > 0)


def test_one_run_sends_each_recording_in_its_own_language(
    pinned: Settings, flow_server: RunningDevServer, tmp_path: Path
) -> None:
    root = tmp_path / "archive"
    write_archive(root, LANGUAGES, extra={})

    result = CliRunner().invoke(app, ["run", str(root)])  # no --language: the manifest's

    rows = items(pinned, root)
    assert set(rows) == set(LANGUAGES.items())
    assert sent_languages(flow_server) == Counter(LANGUAGES.values())
    # The quality gate judges each by its own language: the tone dictation's Latin text
    # is right for English, the wrong script for Hindi, Tamil and Marathi.
    assert rows[("ward1/a.wav", "en-IN")].status == "done"
    for key in [k for k in rows if k[1] != "en-IN"]:
        assert (rows[key].status, rows[key].flags) == ("needs_review", ["script_mismatch"])
    assert result.exit_code == 1, result.output  # held for review
    assert "done en-IN" in result.output  # the summary, language by language
    assert "to check mr" in result.output

    # Given another language later, a recording is a new item; the old result stays.
    write_archive(root, {**LANGUAGES, "ward1/b.wav": "bn"}, extra={})
    again = CliRunner().invoke(app, ["run", str(root), "--language", "en-IN"])
    assert again.exit_code == 1, again.output  # bn is held for review as well

    rows = items(pinned, root)
    assert rows[("ward1/b.wav", "bn")].status == "needs_review"
    assert rows[("ward1/b.wav", "hi")].status == "needs_review"  # kept, not re-sent
    assert sent_languages(flow_server) == Counter([*LANGUAGES.values(), "bn"])


@pytest.mark.parametrize("bad", ["xx-YY", "english"])
def test_a_language_the_service_does_not_take_fails_that_recording_alone(
    pinned: Settings, flow_server: RunningDevServer, tmp_path: Path, bad: str
) -> None:
    root = tmp_path / "archive"
    write_archive(root, LANGUAGES, extra={"ward3/bad.wav": bad, "ward3/plain.wav": ""})

    result = CliRunner().invoke(app, ["run", str(root), "--language", "en-US"])

    assert result.exit_code == 1, result.output  # one recording failed
    rows = items(pinned, root)
    failed = rows[("ward3/bad.wav", bad)]
    assert (failed.status, failed.error_kind) == ("failed", "metadata_invalid")
    assert "ward3/bad.wav" in failed.error_message  # the manifest row
    assert repr(bad) in failed.error_message  # and its value
    assert rows[("ward3/plain.wav", "en-US")].status == "done"  # --language: the default
    assert [key for key, row in rows.items() if row.status == "failed"] == [("ward3/bad.wav", bad)]
    sent = sent_languages(flow_server)
    assert bad not in sent
    assert sent == Counter([*LANGUAGES.values(), "en-US"])


def test_a_run_without_language_needs_a_manifest_that_gives_them(
    pinned: Settings, tmp_path: Path
) -> None:
    root = tmp_path / "plain"
    root.mkdir()
    soundfile.write(root / "a.wav", encode_tone_dictation("note."), 16_000, subtype="PCM_16")

    result = CliRunner().invoke(app, ["run", str(root)])

    assert result.exit_code == 2
    assert "--language is needed" in result.output


def test_the_dry_run_plans_a_mixed_archive_without_language(
    pinned: Settings, flow_server: RunningDevServer, tmp_path: Path
) -> None:
    root = tmp_path / "archive"
    write_archive(root, LANGUAGES, extra={})

    result = CliRunner().invoke(app, ["run", str(root), "--dry-run"])

    assert result.exit_code == 0, result.output
    assert "manifest languages" in result.output
    assert table_rows(result.output)["requests"] == str(len(LANGUAGES))
    assert flow_server.ledger.entries() == []


def test_the_dry_run_counts_a_language_the_service_does_not_take_as_the_run_fails_it(
    pinned: Settings, flow_server: RunningDevServer, tmp_path: Path
) -> None:
    """The dry run planned such a recording as one to transcribe (a request), where the
    run fails it (metadata_invalid) and sends nothing."""
    root = tmp_path / "archive"
    write_archive(root, {"ward1/a.wav": "en-IN"}, extra={"ward3/bad.wav": "xx-YY"})

    result = CliRunner().invoke(app, ["run", str(root), "--language", "en-US", "--dry-run"])

    assert result.exit_code == 0, result.output
    plan = table_rows(result.output)
    assert (plan["files"], plan["files to transcribe"], plan["requests"]) == ("2", "1", "1")
    assert plan["files language not taken"] == "1"
    assert "language not taken: ward3/bad.wav" in result.output.splitlines()
    assert flow_server.ledger.entries() == []


def test_the_dry_run_names_the_files_it_did_not_list_and_why(
    pinned: Settings, flow_server: RunningDevServer, tmp_path: Path
) -> None:
    """A run logs each file not listed with its reason; the dry run only counted them."""
    root = tmp_path / "archive"
    write_archive(root, {"ward1/a.wav": "en-IN", "ward1/b.wav": "en-IN"}, extra={})
    settling = pinned.pipeline.model_copy(update={"settle_s": 600.0})  # all just written

    with pinned_settings(pinned.model_copy(update={"pipeline": settling})):
        result = CliRunner().invoke(app, ["run", str(root), "--dry-run"])

    assert result.exit_code == 0, result.output
    assert table_rows(result.output)["files not listed"] == "2"
    (named,) = [line for line in result.output.splitlines() if line.startswith("not listed:")]
    assert named.startswith("not listed: ward1/a.wav (still being written (modified ")
    assert "; ward1/b.wav (still being written (modified " in named
