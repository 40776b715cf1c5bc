"""Console output: log lines go through the progress bar's console while it is live."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest
from prefect.logging.handlers import PrefectConsoleHandler
from rich.console import Console

from flows.cli.console import logs_through, print_named, print_summary, show_progress
from flows.reporting.summary import RunSummary
from tasks.transcription.progress import FileOutcome, progress_observer


@pytest.fixture
def prefect_console() -> Iterator[tuple[PrefectConsoleHandler, io.StringIO]]:
    """A Prefect console handler on the root logger, as Prefect's logging config installs."""
    stream = io.StringIO()
    handler = PrefectConsoleHandler(stream=stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    logger = logging.getLogger("medasr.test_console")
    previous = logger.level
    logger.setLevel(logging.INFO)
    try:
        yield handler, stream
    finally:
        logger.setLevel(previous)
        root.removeHandler(handler)


def test_log_lines_go_through_the_bar_console_and_come_back(
    prefect_console: tuple[PrefectConsoleHandler, io.StringIO],
) -> None:
    handler, stream = prefect_console
    bar = Console(file=io.StringIO(), markup=False, width=200)
    logger = logging.getLogger("medasr.test_console")

    with logs_through(bar):
        logger.info("while the bar is live [bold]not markup[/bold]")
        assert handler.console is bar

    logger.info("after the bar")
    shown = bar.file.getvalue()  # type: ignore[attr-defined]
    assert "INFO medasr.test_console while the bar is live [bold]not markup[/bold]" in shown
    assert "after the bar" not in shown
    assert "while the bar" not in stream.getvalue()
    assert "after the bar" in stream.getvalue()


def test_handlers_are_restored_when_the_run_fails(
    prefect_console: tuple[PrefectConsoleHandler, io.StringIO],
) -> None:
    handler, _ = prefect_console
    before = handler.console
    with pytest.raises(RuntimeError), logs_through(Console(file=io.StringIO())):
        raise RuntimeError("the flow crashed")
    assert handler.console is before


def test_summary_title_is_not_wrapped(capsys: pytest.CaptureFixture[str]) -> None:
    print_summary({"files": 3, "sent": 0}, title="medasr dry run (en-IN): nothing sent")
    assert "medasr dry run (en-IN): nothing sent" in capsys.readouterr().out


def test_per_file_lines_name_the_path_in_the_source(capsys: pytest.CaptureFixture[str]) -> None:
    root = "/archive/ward 7"
    with show_progress(source_roots=(root,)):  # stdout is not a terminal here: plain lines
        observer = progress_observer()
        observer.on_planned(files=2)
        observer.on_file_finished(FileOutcome(f"{root}/beds/new\nline.wav", "failed",
                                              error_kind="not_audio"))  # fmt: skip
        observer.on_file_finished(FileOutcome(f"{root}/a.wav", "done"))

    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("[1/2] failed (not_audio): beds/new\\nline.wav (")
    assert lines[2].startswith("[2/2] done: a.wav (")
    assert root not in "".join(lines[1:])


def test_named_files_are_bounded_with_the_rest_counted(capsys: pytest.CaptureFixture[str]) -> None:
    uris = ["file:///data/in/a.mp3", "file:///data/in/sub dir/b.wav"]
    print_named("not decodable", uris, total=5, root="file:///data/in")
    assert capsys.readouterr().out == "not decodable: a.mp3, sub dir/b.wav … and 3 more\n"
    print_named("not decodable", [], total=0, root="file:///data/in")
    assert capsys.readouterr().out == ""


def test_summary_explains_needs_review_and_released(capsys: pytest.CaptureFixture[str]) -> None:
    print_summary(RunSummary(files_needs_review=2, files_released=1), title="medasr run")
    out = capsys.readouterr().out
    assert "needs review: transcribed, held for a person (`medasr review`)" in out
    assert "released: taken up, then given back unfinished; pending for the next run" in out
    print_summary(RunSummary(files_done=3), title="medasr run")
    assert "held for a person" not in capsys.readouterr().out  # nothing to explain


def test_summary_keys_stay_as_they_are() -> None:
    summary = RunSummary(files_needs_review=2, files_released=1)
    assert ("files_needs_review", 2) in summary.rows()
    assert ("files_released", 1) in summary.rows()
    assert summary.run_counts()["needs_review"] == 2
    assert summary.run_counts()["released"] == 1
