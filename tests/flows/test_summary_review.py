"""needs_review in the end-of-run summary: counted, in the run row, and its exit code."""

from __future__ import annotations

import pytest

from flows.summary import summarize
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
