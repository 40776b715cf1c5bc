"""What a person sees: a Rich progress bar on a terminal, plain lines otherwise, a summary table."""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from tasks.progress import FileOutcome, set_progress_observer

_CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f]")


class _BarObserver:
    """Files, audio minutes, requests and ETA on one live line."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._task = progress.add_task("files", total=None, minutes=0.0, requests=0)
        self._minutes = 0.0
        self._requests = 0

    def on_planned(self, *, files: int) -> None:
        self._progress.update(self._task, total=files)

    def on_request(self) -> None:
        self._requests += 1
        self._progress.update(self._task, requests=self._requests)

    def on_file_finished(self, outcome: FileOutcome) -> None:
        self._minutes += (outcome.duration_ms or 0) / 60_000
        self._progress.update(self._task, advance=1, minutes=self._minutes)


class _LineObserver:
    """One plain line per file (a log file or a cron mail), no control characters."""

    def __init__(self) -> None:
        self._done = 0
        self._planned = 0
        self._started = time.monotonic()

    def on_planned(self, *, files: int) -> None:
        self._planned = files
        print(f"medasr: {files} files to process", flush=True)

    def on_request(self) -> None:
        pass

    def on_file_finished(self, outcome: FileOutcome) -> None:
        self._done += 1
        detail = f" ({outcome.error_kind})" if outcome.error_kind else ""
        elapsed = time.monotonic() - self._started
        print(
            f"[{self._done}/{self._planned}] {outcome.outcome}{detail}: "
            f"{one_line(outcome.source_uri)} ({elapsed:.1f}s)",
            flush=True,
        )


def one_line(text: str) -> str:
    """`text` with control characters (a newline in a file name) shown as escapes."""
    return _CONTROL_CHARACTERS.sub(lambda found: repr(found.group())[1:-1], text)


@contextmanager
def show_progress(*, quiet: bool = False) -> Iterator[None]:
    """Install a progress observer for the duration of a run."""
    if quiet:
        yield
        return
    if sys.stdout.isatty():
        progress = Progress(
            TextColumn("[bold]files"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[minutes]:.1f} audio min"),
            TextColumn("{task.fields[requests]} requests"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
        )
        with progress:
            set_progress_observer(_BarObserver(progress))
            try:
                yield
            finally:
                set_progress_observer(None)
        return
    set_progress_observer(_LineObserver())
    try:
        yield
    finally:
        set_progress_observer(None)


def print_summary(summary: dict[str, Any], *, title: str) -> None:
    """A short two-column table of the run's counts."""
    table = Table(title=title, show_header=False)
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in summary.items():
        table.add_row(key.replace("_", " "), str(value))
    Console().print(table)
