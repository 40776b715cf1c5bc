"""`medasr quality` and `medasr quality corrections` over a real SQLite store (CliRunner)."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from config.settings import StorageSettings
from flows.cli import app
from storage import open_review_store
from storage.audit_records import AuditFilter
from storage.review_interface import ReviewStore
from tests.helpers.quality import add_reviewed, note_figures

MACHINE = "patient takes met for men 500 mg twice daily for blood pressure"
NOTES = [  # (author, department, final text or None for accepted as is)
    ("dr-a", "cardio", "patient takes metformin 500 mg twice daily for blood pressure"),
    ("dr-a", "cardio", None),
    ("dr-a", "cardio", "patient takes metformin 500 mg daily for blood pressure"),
    ("dr-b", "cardio", "patient takes metformin 500 mg twice daily for high blood pressure"),
    ("dr-b", "neuro", "Patient takes met for men, 500 mg twice daily for blood pressure."),
    ("dr-c", "neuro", "patient takes metformin 500 mg twice a day for blood pressure"),
    ("=cmd", "neuro", "patient takes metformin 500 mg twice daily for blood pressure"),
]


@pytest.fixture
def review_store(migrated_sqlite_url: str) -> Iterator[ReviewStore]:
    opened = open_review_store(StorageSettings(database_url=migrated_sqlite_url))
    yield opened
    opened.dispose()


@pytest.fixture
def reviewed(review_store: ReviewStore) -> list[int]:
    return [
        add_reviewed(
            review_store,
            f"/src/{n}.wav",
            machine=MACHINE,
            final=final,
            metadata={"author": author, "department": dept, "site": f"s{n % 2}"},
            reviewer="ann" if n % 2 else "bob",
        )
        for n, (author, dept, final) in enumerate(NOTES)
    ]


@pytest.mark.parametrize("by", ["author", "department", "reviewer", "site", "month", None])
def test_group_sums_equal_the_per_note_figures(
    runner: CliRunner, review_store: ReviewStore, reviewed: list[int], by: str | None
) -> None:
    result = runner.invoke(app, ["quality", "--format", "jsonl", *(["--by", by] if by else [])])
    assert result.exit_code == 0, result.output
    groups = [json.loads(line) for line in result.stdout.splitlines()]
    notes = note_figures(review_store)
    assert sum(g["notes"] for g in groups) == len(notes) == len(NOTES)
    assert sum(g["words"] for g in groups) == sum(n.words for n in notes.values())
    for column in ("substitutions", "deletions", "insertions"):
        assert sum(g[column] for g in groups) == sum(getattr(n, column) for n in notes.values())
    for group in groups:
        errors = group["substitutions"] + group["deletions"] + group["insertions"]
        assert group["accuracy"] == pytest.approx(1 - errors / group["words"], abs=1e-4)


def test_by_author_figures_worked_out_by_hand(runner: CliRunner, reviewed: list[int]) -> None:
    result = runner.invoke(app, ["quality", "--by", "author", "--format", "jsonl"])
    groups = {g["group"]: g for g in map(json.loads, result.stdout.splitlines())}
    # dr-a: 10 final words, 3 errors (met->metformin, +for +men); accepted: the machine's
    # 12 words, 0 errors; 9 words: the same 3 and "twice" added -> 4. 31 words, 7 errors.
    a = groups["dr-a"]
    assert (a["notes"], a["words"]) == (3, 10 + 12 + 9)
    assert a["accuracy"] == pytest.approx(1 - 7 / 31, abs=1e-4)
    assert a["ci_low"] < a["accuracy"] < a["ci_high"]
    assert a["changed_share"] == pytest.approx(2 / 3, abs=1e-4)
    assert groups["dr-b"]["notes"] == 2
    assert groups["dr-c"]["ci_low"] is None  # one note: no interval


def test_min_notes_leaves_small_groups_out(runner: CliRunner, reviewed: list[int]) -> None:
    result = runner.invoke(app, ["quality", "--by", "author", "--min-notes", "2"])
    assert result.exit_code == 0, result.output
    names = [line.split("\t")[0] for line in result.stdout.splitlines()[1:]]
    assert names == ["dr-a", "dr-b"]


def test_corrections_count_notes_and_authors(runner: CliRunner, reviewed: list[int]) -> None:
    result = runner.invoke(app, ["quality", "corrections", "--format", "jsonl"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    top = rows[0]
    assert (top["machine_words"], top["final_words"]) == ("met for men", "metformin")
    assert (top["notes"], top["authors"]) == (5, 4)  # not the accepted or the restored note
    assert all(len(row["machine_words"].split()) <= 3 for row in rows)
    assert ("daily", "a day") in {(row["machine_words"], row["final_words"]) for row in rows}
    # "twice" removed is a deletion, not a substitution: not a pair
    assert all(row["machine_words"] and row["final_words"] for row in rows)


def test_csv_is_neutralised_and_an_export_is_recorded(
    runner: CliRunner, review_store: ReviewStore, reviewed: list[int]
) -> None:
    result = runner.invoke(app, ["quality", "--by", "author", "--format", "csv"])
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert "'=cmd" in {row["group"] for row in rows}
    table = runner.invoke(app, ["quality", "--by", "author"])
    assert table.exit_code == 0
    with review_store.unit_of_work(read_only=True) as uow:
        events = list(uow.audit.events(AuditFilter(action="quality_exported")))
    assert len(events) == 1  # the table was read, not exported
    assert events[0].detail is not None
    assert (events[0].detail["what"], events[0].detail["rows"]) == ("figures", 4)


def test_the_previous_period_gives_the_change(runner: CliRunner, reviewed: list[int]) -> None:
    result = runner.invoke(app, ["quality", "--since", "2000-01-01", "--format", "jsonl"])
    [group] = [json.loads(line) for line in result.stdout.splitlines()]
    assert group["previous_accuracy"] is None  # nothing reviewed in the period before
    assert group["notes"] == len(NOTES)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--by", "path"], "--by takes"),
        (["--since", "yesterday"], "--since takes a date"),
        (["--language", "xx"], "unsupported language"),
    ],
)
def test_a_bad_option_is_one_line_and_exit_2(
    runner: CliRunner, reviewed: list[int], args: list[str], words: str
) -> None:
    result = runner.invoke(app, ["quality", *args])
    assert result.exit_code == 2
    assert words in result.output
    assert "Traceback" not in result.output


def test_the_command_imports_no_aligner_and_no_status_console() -> None:
    """`medasr quality` reads sums: it must not pay at start-up for jiwer and rapidfuzz
    (aligning is for the notes not yet measured) nor for `medasr status`'s console and
    the run summary and discovery it pulls in (half of the command's second)."""
    probe = (
        "import sys; from flows.cli.commands import COMMANDS, load_command; "
        "load_command(next(c for c in COMMANDS if c.name == 'quality')); "
        "print(' '.join(sorted(sys.modules)))"
    )
    root = Path(__file__).resolve().parents[3]  # the code under test, not an installed copy
    loaded = subprocess.run(
        [sys.executable, "-c", probe], cwd=root, capture_output=True, text=True, check=True
    ).stdout.split()
    heavy = {"jiwer", "rapidfuzz", "rich", "flows.cli.store", "tasks.discovery.discover"}
    assert heavy.isdisjoint(loaded), sorted(heavy.intersection(loaded))


@pytest.mark.parametrize("command", [["quality"], ["quality", "corrections"]])
def test_dash_l_is_the_language_option_as_the_manual_says(
    runner: CliRunner, reviewed: list[int], command: list[str]
) -> None:
    long = runner.invoke(app, [*command, "--language", "en-IN", "--format", "jsonl"])
    short = runner.invoke(app, [*command, "-l", "en-IN", "--format", "jsonl"])
    assert (short.exit_code, short.stdout) == (0, long.stdout), short.output
    assert long.stdout  # the notes are en-IN: the same rows, not two empty answers
