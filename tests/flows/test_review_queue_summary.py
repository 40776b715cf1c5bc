"""MEDASR_REVIEW__REQUIRED=all: the run's summary and the night's artifact show the queue."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from flows.reporting.summary import RunSummary
from storage.records import QueueSize


def test_the_summary_names_the_queue_and_its_oldest_wait_without_failing_the_run() -> None:
    now = datetime(2026, 11, 27, 8, 0, tzinfo=UTC)
    summary = RunSummary(files_done=3).with_review_queue(
        QueueSize(waiting=3, oldest=now - timedelta(hours=5, minutes=30)), now=now
    )
    rows = dict(summary.rows())
    assert rows["review_waiting"] == 3
    assert rows["review_oldest_waiting_h"] == 5.5
    assert summary.exit_code == 0


def test_without_review_for_all_the_rows_are_as_before() -> None:
    rows = dict(RunSummary(files_done=1).rows())
    assert "review_waiting" not in rows
    assert "review_oldest_waiting_h" not in rows
