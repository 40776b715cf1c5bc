"""needs_review in the end-of-run summary: counted, in the run row, and its exit code."""

from __future__ import annotations

import pytest

from flows.summary import exit_code_for, run_counts, run_status, summarize
from tests.flows.test_summary import drained


@pytest.mark.parametrize(
    ("outcomes", "code", "status"),
    [
        (("done", "needs_review"), 0, "done"),
        (("needs_review",), 0, "done"),
        (("needs_review", "failed"), 1, "some_failed"),
    ],
    ids=["done-and-review", "only-review", "review-and-failed"],
)
def test_needs_review_is_counted_but_is_not_a_failure(
    outcomes: tuple[str, ...], code: int, status: str
) -> None:
    summary = summarize(drained(*outcomes))

    assert summary["files_needs_review"] == outcomes.count("needs_review")
    assert summary["files_done"] == outcomes.count("done")
    assert exit_code_for(summary) == code
    assert run_status(summary) == status


def test_the_run_row_keeps_the_needs_review_count() -> None:
    counts = run_counts(summarize(drained("done", "needs_review", "needs_review", "skipped")))

    assert counts["needs_review"] == 2
    assert counts["files"] == 4
    assert counts["done"] == 1
