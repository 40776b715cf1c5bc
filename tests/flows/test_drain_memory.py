"""A drain keeps counts, not every file's outcome: only the recordings a person must check."""

from __future__ import annotations

from flows.drain import DrainResult
from tasks.transcription.progress import FileOutcome, RunStats


def test_done_files_are_counted_not_kept() -> None:
    result = DrainResult(stats=RunStats(), wall_s=0.0, planned=4)

    result.add(
        [
            FileOutcome("/a.wav", "done"),
            FileOutcome("/b.wav", "failed", error_kind="corrupt_audio", reason="bad header"),
            FileOutcome("/c.wav", "released"),
            FileOutcome("/d.wav", "skipped", reason="silent"),
        ]
    )

    assert result.finished == 4
    assert [o.source_uri for o in result.outcomes] == ["/b.wav", "/d.wav"]
