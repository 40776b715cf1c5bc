"""The night counts its holds for review by reason, and a routine hold is no failure."""

from __future__ import annotations

from datetime import UTC, datetime

from flows.batch_loops import DrainResult
from flows.reporting.artifacts import _review_queue
from flows.reporting.summary import summarize
from storage.accuracy_records import NoteAccuracy
from storage.records import ItemStatus
from tasks.transcription.progress import FileOutcome, RunStats


def summary_of(*outcomes: FileOutcome):  # type: ignore[no-untyped-def]
    stats = RunStats()
    for outcome in outcomes:
        stats.add(outcome)
    return summarize(DrainResult(stats=stats, wall_s=1.0, planned=len(outcomes)))


def test_holds_are_counted_by_reason_and_routine_ones_exit_0() -> None:
    summary = summary_of(
        FileOutcome("/a", ItemStatus.DONE, hold_reason="new author"),
        FileOutcome("/b", ItemStatus.DONE, hold_reason="author below 0.97"),
        FileOutcome("/c", ItemStatus.DONE, hold_reason="sample"),
        FileOutcome("/d", ItemStatus.DONE, hold_reason="new department"),
        FileOutcome("/e", ItemStatus.DONE),
    )
    rows = dict(summary.rows())
    assert (rows["review_held_new"], rows["review_held_below"], rows["review_held_sample"]) == (
        2, 1, 1,
    )  # fmt: skip
    assert summary.run_counts()["review_held_new"] == 2
    assert summary.exit_code == 0
    assert ("Held for review by this run, by reason", "below 1, new 2, sample 1") in (
        _review_queue(summary)
    )


def test_a_flag_only_night_reads_as_before() -> None:
    summary = summary_of(
        FileOutcome("/a", ItemStatus.NEEDS_REVIEW, hold_reason="flag: repetition"),
        FileOutcome("/b", ItemStatus.DONE),
    )
    assert not any(name.startswith("review_held") for name, _ in summary.rows())
    assert summary.exit_code == 1


def test_the_night_reports_the_accuracy_of_what_was_reviewed() -> None:
    at = datetime(2026, 12, 1, tzinfo=UTC)
    notes = [
        NoteAccuracy(1, 1, "ann", at, "en-IN", "dr-a", None, 100, 2, 1, 0, 0.97),
        NoteAccuracy(2, 0, "bob", at, "en-IN", "dr-b", None, 300, 0, 0, 0, 1.0),
    ]
    summary = summary_of(FileOutcome("/a", ItemStatus.DONE)).with_reviewed(notes)
    rows = dict(summary.rows())
    assert rows["reviewed_accuracy"] == round(1 - 3 / 400, 4)
    assert summary.run_counts()["reviewed_notes"] == 2
    assert ("Reviewed in the last 24 h", "2 note(s), 400 words, word accuracy 0.9925") in (
        _review_queue(summary)
    )
    assert "reviewed_accuracy" not in dict(summary_of().with_reviewed([]).rows())
