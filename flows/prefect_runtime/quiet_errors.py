"""Prefect logs a failing run's exception with its traceback; medasr's typed errors need none.

A terminal user sees one sentence (e.g. "the service rejected the token ... check
MEDASR_TOKEN") instead of forty lines of frames. Other exceptions keep their traceback.

A night whose recordings failed, were skipped or are held ends Failed (red in Prefect's
UI, an automation's trigger: flows/reporting/states.py), and Prefect's engine logs every
non-Completed end at ERROR. That end is the run's result, which the summary reports, not
an error of the program: its "Finished in state Failed('2 failed, 1 skipped; 13 done')"
line is logged at WARNING. A Failed state with any other message (a crash, an exception,
a stop) stays an ERROR.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager

from config.errors import MedasrError

RUN_LOGGERS = ("prefect.flow_runs", "prefect.task_runs")
# The end of a run that counted its recordings (flows/reporting/states.py counts_message).
_COUNTED_END = re.compile(
    r"Finished in state Failed\('(?:[0-9]+ (?:failed|held for review|skipped)[,;] )+[0-9]+ done'\)"
)


class _DropTypedTracebacks(logging.Filter):
    """Keeps the record and its message; drops the traceback of a MedasrError."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], MedasrError):
            record.exc_info = None
            record.exc_text = None
        return True


class _CountedEndIsNoError(logging.Filter):
    """Logs a run's counted Failed end at WARNING instead of ERROR (its state unchanged)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.ERROR and _COUNTED_END.fullmatch(record.getMessage()):
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


@contextmanager
def typed_errors_without_traceback() -> Iterator[None]:
    """While active, flow and task run logs show medasr errors as their message only, and
    a run's counted Failed end as a WARNING."""
    filters: list[logging.Filter] = [_DropTypedTracebacks(), _CountedEndIsNoError()]
    loggers = [logging.getLogger(name) for name in RUN_LOGGERS]
    for logger in loggers:
        for each in filters:
            logger.addFilter(each)
    try:
        yield
    finally:
        for logger in loggers:
            for each in filters:
                logger.removeFilter(each)
