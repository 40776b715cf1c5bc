"""needs_review in the end-of-run summary: counted, in the run row, and its exit code."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from flows.reporting.summary import summarize
from storage.records import QueueSize
from tests.helpers.summaries import drained


@pytest.mark.parametrize(
    ("outcomes", "code", "status"),
    [
        (("done", "needs_review"), 1, "some_to_review"),
        (("needs_review",), 1, "some_to_review"),
        (("needs_review", "skipped"), 1, "some_skipped"),
        (("needs_review", "failed"), 1, "some_failed"),
    ],
    ids=["done-and-review", "only-review", "review-and-skipped", "review-and-failed"],
)
def test_needs_review_is_counted_and_makes_the_run_exit_1(
    outcomes: tuple[str, ...], code: int, status: str
) -> None:
    summary = summarize(drained(*outcomes))

    assert summary.files_needs_review == outcomes.count("needs_review")
    assert summary.files_done == outcomes.count("done")
    assert summary.exit_code == code
    assert summary.run_status() == status


def test_the_run_row_keeps_the_needs_review_count() -> None:
    counts = summarize(drained("done", "needs_review", "needs_review", "skipped")).run_counts()

    assert counts["needs_review"] == 2
    assert counts["files"] == 4
    assert counts["done"] == 1


def test_a_run_with_a_review_queue_records_its_counts() -> None:
    # Under MEDASR_REVIEW__REQUIRED=all every run carries the queue's size into its run row.
    now = datetime(2026, 11, 27, 8, 0, tzinfo=UTC)
    queue = QueueSize(waiting=3, oldest=now - timedelta(hours=2))
    summary = summarize(drained("done", "done")).with_review_queue(queue, now=now)

    counts = summary.run_counts()

    assert counts["review_waiting"] == 3
    assert counts["done"] == 2
