"""Log records of a head start, held until Prefect's logging is set up, then handed on.

The head start (flows/prefect_runtime/head_start.py) sends requests before Prefect is imported, and
Prefect's import is what gives medasr's loggers their console handler
(prefect.logging.configuration.setup_logging). Without this, what the first seconds
logged would be lost (DEBUG, INFO) or printed bare by Python's last-resort handler
(WARNING and above). Records are held in memory, at most MAX_HELD_RECORDS (the oldest
kept: they explain what follows), and each one is handled by its own logger once the
handlers exist, in order, with its original time.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from flows.prefect_runtime.loggers import MEDASR_LOGGERS

MAX_HELD_RECORDS = 20_000  # about 3 lines per file at DEBUG for a head start of ~7,000 files


class _Holder(logging.Handler):
    """Keeps records (up to a bound) and counts those it had no room for."""

    def __init__(self, *, max_records: int) -> None:
        super().__init__(level=logging.NOTSET)
        self.records: list[logging.LogRecord] = []
        self.dropped = 0
        self._max_records = max_records

    def emit(self, record: logging.LogRecord) -> None:
        if len(self.records) < self._max_records:
            self.records.append(record)
        else:
            self.dropped += 1


class HeldLogs:
    """Holds medasr's log records from `hold()` until `hand_on()` (once Prefect is
    imported): then each goes to its own logger's handlers, in order."""

    def __init__(self, *, max_records: int = MAX_HELD_RECORDS, needed: bool | None = None) -> None:
        # Not needed once Prefect is imported: its handlers are already there.
        self._needed = "prefect" not in sys.modules if needed is None else needed
        self._holder = _Holder(max_records=max_records)
        self._loggers = [logging.getLogger(name) for name in MEDASR_LOGGERS]
        self._holding = False

    def hold(self) -> None:
        """Start holding (a no-op if Prefect's logging was already set up)."""
        if not self._needed or self._holding:
            return
        self._holding = True
        for logger in self._loggers:
            logger.addHandler(self._holder)

    def hand_on(self) -> None:
        """Stop holding; hand what was held to the loggers' handlers. Idempotent."""
        if not self._holding:
            return
        self._holding = False
        for logger in self._loggers:
            logger.removeHandler(self._holder)
        records, self._holder.records = self._holder.records, []
        for record in records:
            logging.getLogger(record.name).handle(record)
        if self._holder.dropped:
            logging.getLogger("medasr").warning(
                "%d log lines of the first seconds were not kept (more than %d)",
                self._holder.dropped,
                len(records),
            )


@contextmanager
def held_logs(*, max_records: int = MAX_HELD_RECORDS) -> Iterator[HeldLogs]:
    """Hold medasr's log records while Prefect is not imported; whatever is still held
    at the end is handed on then."""
    held = HeldLogs(max_records=max_records)
    held.hold()
    try:
        yield held
    finally:
        held.hand_on()
