"""What a person sees: a Rich progress bar on a terminal, plain lines otherwise, a summary table."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
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

from flows.reporting.attention import to_check_lines
from flows.reporting.summary import RunSummary
from tasks.discovery.recording_names import one_line, reason_about, recording_name
from tasks.transcription.progress import TRANSCRIBE_LOGGER, FileOutcome, set_progress_observer

__all__ = ["logs_through", "one_line", "print_summary", "print_table", "show_progress"]


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

    def __init__(self, *, source_roots: Sequence[str]) -> None:
        self._roots = source_roots
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
        why = ""
        if outcome.reason:
            why = ": " + reason_about(outcome.reason, uri=outcome.source_uri, roots=self._roots)
        print(
            f"[{self._done}/{self._planned}] {outcome.word}{detail}: "
            f"{recording_name(outcome.source_uri, roots=self._roots)} ({elapsed:.1f}s){why}",
            flush=True,
        )


@contextmanager
def show_progress(*, quiet: bool = False, source_roots: Sequence[str] = ()) -> Iterator[None]:
    """Install a progress observer for the duration of a run; lines name files relative to
    the deepest of `source_roots` (normalized) holding them."""
    if quiet:
        yield
        return
    if sys.stdout.isatty():
        with _progress_bar() as progress, logs_through(progress.console):
            set_progress_observer(_BarObserver(progress))
            try:
                yield
            finally:
                set_progress_observer(None)
        return
    # Each plain line says what its log record would: the file is told once.
    per_file = logging.getLogger(TRANSCRIBE_LOGGER)
    per_file.addFilter(_not_per_file)
    set_progress_observer(_LineObserver(source_roots=source_roots))
    try:
        yield
    finally:
        set_progress_observer(None)
        per_file.removeFilter(_not_per_file)


def _not_per_file(record: logging.LogRecord) -> bool:
    return not getattr(record, "per_file", False)


def _progress_bar() -> Progress:
    # No markup in printed lines: a log line holding "[bold]" (a file name) stays as it is.
    return Progress(
        TextColumn("[bold]files"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[minutes]:.1f} audio min"),
        TextColumn("{task.fields[requests]} requests"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=Console(markup=False, emoji=False),
    )


@contextmanager
def logs_through(console: Console) -> Iterator[None]:
    """Print every console log line (medasr's and Prefect's) through `console`.

    medasr's loggers propagate to Prefect's console handler on the root logger; it and
    every other handler printing through its own Rich console write straight to the
    terminal and would cut through a live progress bar. Pointed at the bar's console,
    their lines appear above the bar and the bar is redrawn below them.
    """
    swapped = [(handler, handler.console) for handler in _rich_console_handlers()]
    for handler, _ in swapped:
        handler.console = console
    try:
        yield
    finally:
        for handler, previous in swapped:
            handler.console = previous


def _rich_console_handlers() -> list[Any]:
    loggers = [logging.getLogger()] + [
        logger
        for logger in logging.Logger.manager.loggerDict.values()
        if isinstance(logger, logging.Logger)
    ]
    found = {
        id(handler): handler
        for logger in loggers
        for handler in logger.handlers
        if isinstance(getattr(handler, "console", None), Console)
    }
    return list(found.values())


def print_summary(
    summary: RunSummary | Mapping[str, Any],
    *,
    title: str,
    store: str | None = None,
    skipped_rejudged: bool = False,
) -> None:
    """A short two-column table of the run's counts, where the store is (`store: PATH`),
    then the recordings to check.

    Yes/no rows (credentials rejected, interrupted...) are shown only when true. A plain
    mapping (the delivery command's counts) is shown as it is.
    """
    if not isinstance(summary, RunSummary):
        print_table(summary.items(), title=title)
        print_store(store)
        return
    print_table(summary.rows(), title=title)
    print_store(store)
    legend = summary_legend(summary)
    if legend:
        print(legend, flush=True)
    if summary.budget_message:  # the run did what it was told: exit 0, this line says why
        print(summary.budget_message, flush=True)
    for line in to_check_lines(
        summary.to_check, total=summary.to_check_total, skipped_rejudged=skipped_rejudged
    ):  # one line each: never wrapped, no markup
        print(line, flush=True)


def print_store(store: str | None, *, err: bool = False) -> None:
    """`store: /abs/path/medasr.db` (or the redacted URL): which store a command used."""
    if store is not None:
        print(f"store: {one_line(store)}", file=sys.stderr if err else sys.stdout, flush=True)


# The rows whose name alone does not say what happened to the file; the table keeps
# the names (scripts read them), this line says what they mean when they count.
_LEGEND = (
    ("files_needs_review", "needs review: transcribed, held for a person (`medasr review`)"),
    ("files_released", "released: taken up, then given back unfinished; pending for the next run"),
)


def summary_legend(summary: RunSummary) -> str:
    """One line explaining the summary's non-zero rows that need it, or ""."""
    counts = dict(summary.rows())
    return "; ".join(words for row, words in _LEGEND if counts.get(row))


def print_table(rows: Iterable[tuple[str, Any]], *, title: str) -> None:
    """(name, value) rows as a two-column table; names with spaces for underscores."""
    table = Table(title=title, show_header=False, min_width=len(title))
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in rows:
        if value is False:
            continue
        shown = "yes" if value is True else str(value)  # "credentials rejected │ yes"
        table.add_row(key.replace("_", " "), shown)
    Console().print(table)


def print_named(
    what: str, uris: Sequence[str], *, total: int, root: str, reasons: Sequence[str] = ()
) -> None:
    """`what: a.mp3, b/c.wav … and 3 more`: the first files by their path under `root`;
    with `reasons` (one a file), `what: a.wav (why); b.wav (why) … and 3 more`."""
    if not uris:
        return
    named = [recording_name(uri, roots=[root]) for uri in uris]
    if reasons:
        names = "; ".join(f"{name} ({why})" for name, why in zip(named, reasons, strict=True))
    else:
        names = ", ".join(named)
    more = f" … and {total - len(uris)} more" if total > len(uris) else ""
    print(f"{what}: {names}{more}")
