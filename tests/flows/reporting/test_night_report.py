"""The night's markdown keeps what is still open in the store in view, deliveries in doubt too."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from flows.reporting.artifacts import Night, night_report
from flows.reporting.summary import RunSummary
from storage.records import ItemRecord

NIGHT = Night(language="en-IN", source="recordings", date="2026-11-24")


@pytest.mark.parametrize(
    ("in_doubt", "shown"),
    [(0, False), (3, True)],
    ids=["nothing-in-doubt", "three-in-doubt"],
)
def test_deliveries_in_doubt_are_in_every_nights_report_with_their_command(
    in_doubt: int, shown: bool
) -> None:
    markdown = night_report(
        RunSummary(files_done=2),
        title="medasr backlog",
        night=NIGHT,
        items=[],
        open_total=0,
        roots=(),
        in_doubt=in_doubt,
    )
    assert ("## Deliveries in doubt (3)" in markdown) is shown
    assert ("medasr deliver --resend-in-doubt" in markdown) is shown


def test_the_fix_commands_say_which_store_they_apply_to() -> None:
    now = datetime.now(UTC)
    item = ItemRecord(
        id=7, source_uri="/archive/a.wav", language="en-IN", source_version="1", sha256=None,
        size_bytes=1, duration_ms=None, status="failed", error_kind="corrupt_audio",
        error_message="damaged", retryable=False, attempts=1, next_attempt_at=None,
        lease_owner=None, lease_expires_at=None, text=None, extras={}, chunk_count=None,
        created_at=now, updated_at=now, done_at=None,
    )  # fmt: skip
    markdown = night_report(
        RunSummary(files_failed=1),
        title="medasr backlog",
        night=NIGHT,
        items=[item],
        open_total=1,
        roots=("/archive",),
        store="postgresql+psycopg://medasr:***@db.example/medasr",
    )
    assert "MEDASR_DATABASE_URL=postgresql+psycopg://medasr:***@db.example/medasr" in markdown


def test_a_mixed_night_shows_each_recordings_language_and_the_counts_by_language() -> None:
    now = datetime.now(UTC)
    item = ItemRecord(
        id=8, source_uri="/archive/b.wav", language="ta", source_version="1", sha256=None,
        size_bytes=1, duration_ms=None, status="failed", error_kind="metadata_invalid",
        error_message="bad", retryable=False, attempts=1, next_attempt_at=None,
        lease_owner=None, lease_expires_at=None, text=None, extras={}, chunk_count=None,
        created_at=now, updated_at=now, done_at=None,
    )  # fmt: skip
    summary = RunSummary(files_done=2, files_failed=1, by_language=(("hi", 2, 0), ("ta", 0, 1)))

    markdown = night_report(
        summary,
        title="medasr backlog",
        night=Night(language="all", source="archive", date="2026-12-02"),
        items=[item],
        open_total=1,
        roots=("/archive",),
    )

    assert "| Recording | Status | Kind | Retryable | Reason | Fix | Language |" in markdown
    [row] = [line for line in markdown.splitlines() if line.startswith("| b.wav")]
    assert row.rstrip(" |").endswith("ta")
    assert "| Language hi | 2 done, 0 to check |" in markdown
    assert "| Language ta | 0 done, 1 to check |" in markdown
