"""Run statistics and the observer the command line hangs its progress bar on."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal, Protocol

from storage.records import ItemStatus
from tasks.transcription.review_routing import reason_key

logger = logging.getLogger("medasr.progress")

# An item status a file ended in, or: given back unfinished (released), taken over by
# another worker (lost).
# The logger of the one line per failed or skipped file (tasks/transcription/file_run.py).
TRANSCRIBE_LOGGER = "medasr.transcribe"
Outcome = ItemStatus | Literal["released", "lost"]


@dataclass(frozen=True)
class FileOutcome:
    """What became of one claimed file; never carries transcript text."""

    source_uri: str
    outcome: Outcome
    duration_ms: int | None = None
    requests: int = 0
    chunks: int = 0
    error_kind: str | None = None
    retryable: bool = False
    reason: str | None = None  # why it failed or was skipped, in words (the error's message)
    hold_reason: str | None = None  # why it waits for a person (review_routing.py), if it does

    @property
    def word(self) -> str:
        """The outcome as a progress line says it: `review` for a transcript that waits
        for a person (flagged or routinely held), else the outcome itself."""
        if self.outcome == ItemStatus.NEEDS_REVIEW or self.hold_reason is not None:
            return "review"
        return str(self.outcome)


@dataclass
class RunStats:
    """Counters of one run; mutated only on the event loop thread."""

    files: dict[str, int] = field(default_factory=dict)
    audio_ms_done: int = 0
    requests: int = 0
    retries: int = 0
    chunks_sent: int = 0
    chunks_reused: int = 0
    held: dict[str, int] = field(default_factory=dict)  # holds for review by reason key
    # Outcomes by the recording's language: a mixed archive's summary breaks them down.
    by_language: dict[str, dict[str, int]] = field(default_factory=dict)

    def count_sent(self, *, retry: bool) -> None:
        """Count one attempt as it goes on the wire (`retry`: not its call's first): a
        retry scheduled but never sent (the run stopped meanwhile) is not counted."""
        self.requests += 1
        if retry:
            self.retries += 1

    def add(self, outcome: FileOutcome, *, language: str | None = None) -> None:
        """Count one finished file (and, given, under its language)."""
        self.files[outcome.outcome] = self.files.get(outcome.outcome, 0) + 1
        if language is not None:
            counts = self.by_language.setdefault(language, {})
            counts[outcome.outcome] = counts.get(outcome.outcome, 0) + 1
        if outcome.outcome == ItemStatus.DONE and outcome.duration_ms:
            self.audio_ms_done += outcome.duration_ms
        if outcome.hold_reason is not None:
            key = reason_key(outcome.hold_reason)
            self.held[key] = self.held.get(key, 0) + 1

    @property
    def failed(self) -> int:
        """Files that ended failed in this run."""
        return self.files.get(ItemStatus.FAILED, 0)


class ProgressObserver(Protocol):
    """Receives progress events; implementations must be cheap and never raise."""

    def on_planned(self, *, files: int) -> None: ...

    def on_request(self) -> None: ...

    def on_file_finished(self, outcome: FileOutcome) -> None: ...


class _Silent:
    def on_planned(self, *, files: int) -> None:
        pass

    def on_request(self) -> None:
        pass

    def on_file_finished(self, outcome: FileOutcome) -> None:
        pass


class _Guarded:
    """Passes events on; an observer that fails (stdout closed by `| head`) is dropped.

    Progress output must never cost a file: the failure is logged once and the run goes
    on without it.
    """

    def __init__(self, inner: ProgressObserver) -> None:
        self._inner: ProgressObserver = inner

    def on_planned(self, *, files: int) -> None:
        self._call(lambda: self._inner.on_planned(files=files))

    def on_request(self) -> None:
        self._call(self._inner.on_request)

    def on_file_finished(self, outcome: FileOutcome) -> None:
        self._call(lambda: self._inner.on_file_finished(outcome))

    def _call(self, event: Callable[[], None]) -> None:
        try:
            event()
        except Exception as exc:
            logger.warning("progress output failed (%s); going on without it", type(exc).__name__)
            self._inner = _Silent()


class _FanOut:
    """Passes every event to each observer in turn."""

    def __init__(self, observers: Sequence[ProgressObserver]) -> None:
        self._observers = observers

    def on_planned(self, *, files: int) -> None:
        for observer in self._observers:
            observer.on_planned(files=files)

    def on_request(self) -> None:
        for observer in self._observers:
            observer.on_request()

    def on_file_finished(self, outcome: FileOutcome) -> None:
        for observer in self._observers:
            observer.on_file_finished(outcome)


_observer: ProgressObserver = _Silent()
_run_observers: list[ProgressObserver] = []  # a flow's own (its progress artifact, its log)


def set_progress_observer(observer: ProgressObserver | None) -> None:
    """Install the process-wide observer (the CLI's progress bar); None removes it."""
    global _observer  # one observer per process, set by the CLI only
    _observer = _Guarded(observer) if observer is not None else _Silent()


@contextmanager
def observing(observer: ProgressObserver) -> Iterator[None]:
    """Add a flow's own observer beside the CLI's for the block (guarded the same way)."""
    guarded = _Guarded(observer)
    _run_observers.append(guarded)
    try:
        yield
    finally:
        _run_observers.remove(guarded)


def progress_observer() -> ProgressObserver:
    """The installed observers as one (a silent one by default)."""
    if not _run_observers:
        return _observer
    return _FanOut([_observer, *_run_observers])
