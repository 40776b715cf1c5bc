"""medasr's log lines in the flow run's logs (Prefect's Logs tab), as on the terminal.

Prefect sends only its own loggers to its API; medasr's lines (which file failed and
why, throttling, leases) are module loggers. For one flow run, an API handler is
attached to them, bound to that flow run so lines from worker threads are not dropped.
The lines are the terminal's own: recordings named by their path relative to the
source, never transcript text, a token or a patient id (tests/reliability/test_secrets.py).
One more line per finished recording is written for Prefect only (`medasr.files`): the
terminal already prints its own per-file line or bar. Calm ones are sent a second's worth
to a record (FileLines).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from uuid import UUID

from prefect.context import FlowRunContext
from prefect.logging.handlers import APILogHandler

from flows.prefect_runtime.loggers import MEDASR_LOGGERS
from storage.records import ItemStatus
from tasks.discovery.recording_names import recording_name
from tasks.transcription.progress import FileOutcome

FILES_LOGGER = "medasr.files"  # per-recording lines for Prefect only (not propagated)
CALM_LINES_WAIT_S = 1.0  # a calm line reaches Prefect at most this late (while the run goes on)
CALM_LINES_PER_RECORD = 100


class _FlowRunLogHandler(APILogHandler):
    """Prefect's API handler, bound to one flow run and its API (records from any thread).

    Prefect picks the log worker by the API URL of the context a record is emitted in. A
    thread started without the flow run's context (a decode thread) has none: Prefect
    would start a temporary server of its own mid-run to send that thread's lines to (a
    second server's start-up and upkeep). Every record is sent from the flow run's
    context, captured when the handler is made.
    """

    def __init__(self, flow_run_id: UUID) -> None:
        super().__init__()
        self._flow_run_id = flow_run_id
        self._context = contextvars.copy_context()

    def emit(self, record: logging.LogRecord) -> None:
        self._context.copy().run(super().emit, record)  # a copy: any thread may enter it

    def prepare(self, record: logging.LogRecord) -> dict[str, Any]:
        if not getattr(record, "flow_run_id", None):
            record.flow_run_id = self._flow_run_id
        prepared: dict[str, Any] = super().prepare(record)
        return prepared


class FileLines:
    """A progress observer: one log line per finished recording, like the terminal's.

    A recording that failed, was skipped or is held for review gets a record (WARNING) of
    its own at once. Calm lines (done, purged, released) are gathered: one record holds
    those of up to `flush_after_s` seconds (at most `max_lines` lines), so a night of
    10^6 recordings sends Prefect one calm record a second, not one per recording (each
    record is a model built, sent and stored by Prefect's server: 0.4 ms of medasr's CPU
    per recording when sent one by one). Order is kept: gathered lines go out before a
    warning, and `flush()` sends what is left when the run ends.
    """

    def __init__(
        self,
        *,
        source_roots: Sequence[str],
        planned: int,
        done: int = 0,
        flush_after_s: float = CALM_LINES_WAIT_S,
        max_lines: int = CALM_LINES_PER_RECORD,
    ) -> None:
        self._roots = source_roots
        self._logger = logging.getLogger(FILES_LOGGER)
        self._planned = planned
        self._done = done  # finished before the flow run (flows/prefect_runtime/head_start.py)
        self._flush_after_s = flush_after_s
        self._max_lines = max_lines
        self._calm: list[str] = []
        self._timer: asyncio.TimerHandle | None = None

    def on_planned(self, *, files: int) -> None:
        self._planned = files

    def on_request(self) -> None:
        pass

    def on_file_finished(self, outcome: FileOutcome) -> None:
        self._done += 1
        detail = f" ({outcome.error_kind})" if outcome.error_kind else ""
        name = recording_name(outcome.source_uri, roots=self._roots)
        line = f"[{self._done}/{self._planned}] {outcome.word}{detail}: {name}"
        if outcome.outcome not in (ItemStatus.DONE, ItemStatus.PURGED, "released"):
            self.flush()
            self._logger.warning("%s", line)
            return
        self._calm.append(line)
        if len(self._calm) >= self._max_lines:
            self.flush()
        elif self._timer is None:
            self._flush_later()

    def flush(self) -> None:
        """Send the gathered calm lines now, as one record."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._calm:
            lines, self._calm = self._calm, []
            self._logger.info("%s", "\n".join(lines))

    def _flush_later(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no event loop in this thread: nothing would flush later
            self.flush()
            return
        self._timer = loop.call_later(self._flush_after_s, self.flush)


@contextmanager
def logs_to_prefect(*, level: str) -> Iterator[None]:
    """For the block: medasr's loggers at `level` also write to the current flow run's logs.

    Outside a flow run (a plain call in a test) nothing changes.
    """
    context = FlowRunContext.get()
    if context is None or context.flow_run is None:
        yield
        return
    handler = _FlowRunLogHandler(context.flow_run.id)
    loggers = [logging.getLogger(name) for name in MEDASR_LOGGERS]
    files = logging.getLogger(FILES_LOGGER)
    previous = [(logger, logger.level) for logger in [*loggers, files]]
    files.propagate = False
    for logger in [*loggers, files]:
        logger.setLevel(level)
    for logger in [*loggers, files]:
        logger.addHandler(handler)
    try:
        yield
    finally:
        for logger, old in previous:
            logger.removeHandler(handler)
            logger.setLevel(old)
        files.propagate = True
