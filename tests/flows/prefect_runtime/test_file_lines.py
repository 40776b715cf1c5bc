"""Per-recording lines for Prefect: calm ones gathered into one record a second, problems
at once, order kept, nothing left behind when the run ends."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator

import pytest

from flows.prefect_runtime.run_logs import FILES_LOGGER, FileLines
from storage.records import ItemStatus
from tasks.transcription.progress import FileOutcome

ROOT = "/archive/ward 7"


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append((record.levelname, record.getMessage()))


@pytest.fixture
def records() -> Iterator[Records]:
    logger = logging.getLogger(FILES_LOGGER)
    handler = Records()
    old_level, old_propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
        logger.propagate = old_propagate


def done(name: str) -> FileOutcome:
    return FileOutcome(f"{ROOT}/{name}", ItemStatus.DONE)


def test_calm_lines_of_a_second_go_out_as_one_record(records: Records) -> None:
    async def night() -> None:
        lines = FileLines(source_roots=[ROOT], planned=3, flush_after_s=0.05)
        for name in ("a.wav", "b.wav", "c.wav"):
            lines.on_file_finished(done(name))
        assert records.seen == []  # gathered, not yet sent
        await asyncio.sleep(0.2)  # the run goes on; no further recording finishes

    asyncio.run(night())
    assert records.seen == [("INFO", "[1/3] done: a.wav\n[2/3] done: b.wav\n[3/3] done: c.wav")]


def test_a_problem_goes_out_at_once_after_the_calm_lines_before_it(records: Records) -> None:
    async def night() -> None:
        lines = FileLines(source_roots=[ROOT], planned=3, flush_after_s=60)
        lines.on_file_finished(done("a.wav"))
        lines.on_file_finished(
            FileOutcome(f"{ROOT}/bad.mp3", ItemStatus.FAILED, error_kind="corrupt_audio")
        )
        lines.on_file_finished(done("c.wav"))
        assert records.seen == [
            ("INFO", "[1/3] done: a.wav"),
            ("WARNING", "[2/3] failed (corrupt_audio): bad.mp3"),
        ]
        lines.flush()  # the run ends
        assert records.seen[-1] == ("INFO", "[3/3] done: c.wav")
        lines.flush()
        assert len(records.seen) == 3  # nothing sent twice

    asyncio.run(night())


def test_a_record_holds_at_most_max_lines(records: Records) -> None:
    async def night() -> None:
        lines = FileLines(source_roots=[ROOT], planned=5, flush_after_s=60, max_lines=2)
        for index in range(5):
            lines.on_file_finished(done(f"{index}.wav"))
        lines.flush()

    asyncio.run(night())
    assert [message.count("\n") + 1 for _, message in records.seen] == [2, 2, 1]


def test_a_name_with_a_percent_sign_is_logged_as_it_is(records: Records) -> None:
    lines = FileLines(source_roots=[ROOT], planned=1)
    lines.on_file_finished(done("100%s.wav"))  # no event loop here: sent at once
    assert records.seen == [("INFO", "[1/1] done: 100%s.wav")]


def test_a_recording_waiting_for_review_is_said_review(
    records: Records, capsys: pytest.CaptureFixture[str]
) -> None:
    """Flagged by the gate, or held because every transcript waits (REQUIRED=all):
    `review` in Prefect's lines and on the terminal, never `done`."""
    from flows.cli.console import _LineObserver

    flagged = FileOutcome(f"{ROOT}/a.wav", ItemStatus.NEEDS_REVIEW, reason="held for review: x")
    routine = FileOutcome(f"{ROOT}/b.wav", ItemStatus.DONE, hold_reason="all")
    lines = FileLines(source_roots=[ROOT], planned=2)
    terminal = _LineObserver(source_roots=[ROOT])
    terminal.on_planned(files=2)
    for outcome in (flagged, routine):
        lines.on_file_finished(outcome)
        terminal.on_file_finished(outcome)
    lines.flush()
    assert records.seen == [("WARNING", "[1/2] review: a.wav"), ("INFO", "[2/2] review: b.wav")]
    printed = capsys.readouterr().out.splitlines()
    assert [line.split(" (")[0] for line in printed[1:]] == [
        "[1/2] review: a.wav",
        "[2/2] review: b.wav",
    ]
