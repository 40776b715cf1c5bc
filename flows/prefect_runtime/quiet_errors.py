"""Prefect logs a failing run's exception with its traceback; medasr's typed errors need none.

A terminal user sees one sentence (e.g. "the service rejected the token ... check
MEDASR_TOKEN") instead of forty lines of frames. Other exceptions keep their traceback.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from config.errors import MedasrError

RUN_LOGGERS = ("prefect.flow_runs", "prefect.task_runs")


class _DropTypedTracebacks(logging.Filter):
    """Keeps the record and its message; drops the traceback of a MedasrError."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], MedasrError):
            record.exc_info = None
            record.exc_text = None
        return True


@contextmanager
def typed_errors_without_traceback() -> Iterator[None]:
    """While active, flow and task run logs show medasr errors as their message only."""
    drop = _DropTypedTracebacks()
    loggers = [logging.getLogger(name) for name in RUN_LOGGERS]
    for logger in loggers:
        logger.addFilter(drop)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeFilter(drop)
