"""The night's markdown keeps what is still open in the store in view, deliveries in doubt too."""

from __future__ import annotations

import pytest

from flows.artifacts import Night, night_report
from flows.summary import RunSummary

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
