"""`medasr status --by COLUMN`: what was sent, per department (a manifest column), as the
devserver's ledger bills it, retries included; CSV for a spreadsheet, formulas defused."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import soundfile
from typer.testing import CliRunner

from config.settings import Settings, pinned_settings
from devserver import RunningDevServer, start_devserver
from devserver.ledger import LedgerEntry
from devserver.tone import encode_tone_dictation
from flows.cli import app
from tasks.audio import WAV_HEADER_BYTES
from tests.helpers.flows import TOKEN, settings_for

DEPARTMENTS = {
    "w1/a.wav": "cardiology",
    "w1/b.wav": "cardiology",
    "w2/c.wav": '=HYPERLINK("http://x")',
    "w2/d.wav": "",  # no department: counted under "(none)"
}
NOTES = [
    "patient",
    "seen",
    "today",
    "with",
    "chest",
    "pain",
    "plan",
    "discussed",
    "review",
    "in",
    "clinic",
    "next",
    "week",
]
PRICE = 2.0
BILLED_MIN_S = 5


@pytest.fixture
def retrying_server() -> Iterator[RunningDevServer]:
    # The first request fails once (503) and is retried: the vendor sees, and bills, both.
    with start_devserver(token=TOKEN, port=0, fault_script=("503",)) as server:
        yield server


@pytest.fixture
def priced(
    prefect_harness: None, retrying_server: RunningDevServer, tmp_path: Path
) -> Iterator[Settings]:
    base = settings_for(retrying_server, tmp_path / "medasr.db")
    settings = base.model_copy(
        update={
            "service": base.service.model_copy(
                update={"price_per_audio_min": PRICE, "billed_min_s_per_request": BILLED_MIN_S}
            )
        }
    )
    with pinned_settings(settings):
        yield settings


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    root = tmp_path / "archive"
    for i, name in enumerate(DEPARTMENTS):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        text = " ".join(["note", str(i), *NOTES[: 4 + 3 * i]]) + "."
        soundfile.write(root / name, encode_tone_dictation(text), 16_000, subtype="PCM_16")
    with (root / "medasr.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["path", "department"])
        writer.writerows(DEPARTMENTS.items())
    return root


def billed_ms(entry: LedgerEntry) -> int:
    return max((entry.bytes - WAV_HEADER_BYTES) // 32, BILLED_MIN_S * 1000)


def status_by(*args: str) -> str:
    result = CliRunner().invoke(app, ["status", "--by", *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_status_by_department_bills_what_the_ledger_saw(
    priced: Settings, archive: Path, retrying_server: RunningDevServer
) -> None:
    run = CliRunner().invoke(app, ["run", str(archive), "--language", "en-IN"])
    assert run.exit_code == 0, run.output

    rows = [json.loads(line) for line in status_by("department", "--format", "jsonl").splitlines()]

    by = {row["department"]: row for row in rows}
    assert set(by) == {"cardiology", DEPARTMENTS["w2/c.wav"], "(none)"}
    assert by["cardiology"]["recordings_done"] == 2
    entries = [e for e in retrying_server.ledger.entries() if e.bytes > 0]
    assert [e.status for e in entries].count(503) == 1  # one request was retried
    assert sum(row["requests"] for row in rows) == len(entries)
    billed_min = sum(billed_ms(e) for e in entries) / 60_000
    assert sum(row["billed_minutes"] for row in rows) == pytest.approx(billed_min, abs=0.02)
    assert sum(row["estimated_cost"] for row in rows) == pytest.approx(billed_min * PRICE, abs=0.05)
    assert sum(row["audio_hours"] for row in rows) > 0


def test_status_by_csv_defuses_formulas_and_filters_dates(priced: Settings, archive: Path) -> None:
    run = CliRunner().invoke(app, ["run", str(archive), "--language", "en-IN"])
    assert run.exit_code == 0, run.output

    table = list(csv.DictReader(io.StringIO(status_by("department", "--format", "csv"))))
    values = {row["department"] for row in table}
    assert "'" + DEPARTMENTS["w2/c.wav"] in values  # text to a spreadsheet, not a formula
    assert not any(v.startswith("=") for v in values)
    # Nothing finished before 2000 nor, by language, in another language.
    assert status_by("department", "--until", "2000-01-01", "--format", "csv") == ""
    assert status_by("language", "--format", "jsonl", "--language", "hi") == ""
    [month] = [json.loads(line) for line in status_by("month", "--format", "jsonl").splitlines()]
    assert month["recordings_done"] == len(DEPARTMENTS)


def test_status_options_of_by_alone_are_refused(priced: Settings) -> None:
    result = CliRunner().invoke(app, ["status", "--format", "csv"])

    assert result.exit_code == 2
    assert "--by COLUMN" in result.output


def test_a_copy_whose_text_was_reused_is_done_and_costs_no_request(
    priced: Settings, tmp_path: Path, retrying_server: RunningDevServer
) -> None:
    """Two copies of one dictation: one request (content reuse), two recordings done, as
    plain `status` counts them; the copy's audio is done audio, its cost nothing."""
    dup = tmp_path / "dup"
    dup.mkdir()
    audio = encode_tone_dictation("note one. " + " ".join(NOTES) + ".")
    for name in ("a.wav", "b.wav"):
        soundfile.write(dup / name, audio, 16_000, subtype="PCM_16")
    run = CliRunner().invoke(app, ["run", str(dup), "--language", "en-IN"])
    assert run.exit_code == 0, run.output

    [row] = [json.loads(line) for line in status_by("language", "--format", "jsonl").splitlines()]

    entries = [e for e in retrying_server.ledger.entries() if e.bytes > 0]
    assert {e.sha256 for e in entries} == {entries[0].sha256}  # only one copy was sent
    assert (row["language"], row["recordings_done"]) == ("en-IN", 2)
    assert row["requests"] == len(entries)
    one_copy_h = len(audio) / 16_000 / 3600
    assert row["audio_hours"] == pytest.approx(2 * one_copy_h, abs=0.002)
    billed_min = sum(billed_ms(e) for e in entries) / 60_000
    assert row["billed_minutes"] == pytest.approx(billed_min, abs=0.02)


def test_a_column_no_recording_has_is_refused_naming_those_that_exist(
    priced: Settings, archive: Path
) -> None:
    """A finance officer's typo must not read as "nothing was spent": exit 2, one line
    naming the columns there are; a language the service does not take is refused as
    every other command refuses it."""
    run = CliRunner().invoke(app, ["run", str(archive), "--language", "en-IN"])
    assert run.exit_code == 0, run.output

    typo = CliRunner().invoke(app, ["status", "--by", "departmnet"])
    xx = CliRunner().invoke(app, ["status", "--by", "language", "--language", "xx"])

    assert typo.exit_code == 2, typo.output
    [line] = typo.stderr.splitlines()
    assert line.startswith("medasr: ")
    assert "'departmnet'" in line
    assert "did you mean 'department'?" in line
    assert "department, language, month" in line, line
    assert "(none)" not in typo.stdout
    assert xx.exit_code == 2, xx.output
    assert xx.stderr.splitlines() == ["medasr: configuration error: unsupported language 'xx'"]
    assert status_by("department", "--format", "jsonl")  # a column some recording has
