"""Log lines of a head start are held until Prefect's handlers exist, then printed in order."""

from __future__ import annotations

import logging

import pytest

from flows.prefect_runtime.held_logs import HeldLogs


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture
def later_handler() -> _Collect:
    """Stands for the console handler Prefect's import attaches (to the root logger)."""
    return _Collect()


def test_held_lines_reach_a_handler_attached_later_in_order(later_handler: _Collect) -> None:
    service = logging.getLogger("service.http_client")
    service.setLevel(logging.DEBUG)
    held = HeldLogs(needed=True)
    held.hold()
    try:
        service.debug("transcribe attempt=%d", 1)
        logging.getLogger("tasks.transcription").warning("retry attempt=%d", 2)
        logging.getLogger().addHandler(later_handler)  # Prefect imported meanwhile
        assert later_handler.lines == []  # held, not yet printed
        held.hand_on()
        service.info("after")  # no longer held: straight through
    finally:
        held.hand_on()
        logging.getLogger().removeHandler(later_handler)
        service.setLevel(logging.NOTSET)
    assert later_handler.lines == ["transcribe attempt=1", "retry attempt=2", "after"]


def test_lines_beyond_the_bound_are_counted_not_kept(later_handler: _Collect) -> None:
    logger = logging.getLogger("medasr.test")
    held = HeldLogs(needed=True, max_records=2)
    held.hold()
    for n in range(5):
        logger.warning("line %d", n)
    logging.getLogger().addHandler(later_handler)
    try:
        held.hand_on()
    finally:
        logging.getLogger().removeHandler(later_handler)
    assert later_handler.lines == [
        "line 0",
        "line 1",
        "3 log lines of the first seconds were not kept (more than 2)",
    ]


def test_nothing_is_held_once_prefect_has_set_up_logging(later_handler: _Collect) -> None:
    logging.getLogger().addHandler(later_handler)
    try:
        held = HeldLogs(needed=False)
        held.hold()
        logging.getLogger("storage.x").warning("at once")
        assert later_handler.lines == ["at once"]
        held.hand_on()
    finally:
        logging.getLogger().removeHandler(later_handler)
    assert later_handler.lines == ["at once"]
