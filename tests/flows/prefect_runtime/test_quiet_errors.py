"""A night's counted Failed end is logged as a WARNING; every other Failed end stays ERROR."""

from __future__ import annotations

import logging

import pytest

from flows.prefect_runtime.quiet_errors import typed_errors_without_traceback


@pytest.mark.parametrize(
    ("message", "level"),
    [
        ("Finished in state Failed('2 failed, 1 skipped; 13 done')", "WARNING"),
        ("Finished in state Failed('1 held for review; 0 done')", "WARNING"),
        ("Finished in state Failed('credentials rejected: 401 (exit code 3)')", "ERROR"),
        ("Finished in state Failed('Flow run encountered an exception: boom')", "ERROR"),
    ],
)
def test_only_a_counted_end_is_no_error(
    caplog: pytest.LogCaptureFixture, message: str, level: str
) -> None:
    logger = logging.getLogger("prefect.flow_runs")
    # Prefect's logging configuration (set up by any earlier test in this process) stops
    # its loggers propagating to the root, where caplog listens, and adds its API handler,
    # which refuses a record outside a flow run: only caplog listens, on the logger itself.
    handlers, propagate = logger.handlers, logger.propagate
    logger.handlers, logger.propagate = [caplog.handler], False
    try:
        with caplog.at_level(logging.INFO, logger="prefect.flow_runs"):
            with typed_errors_without_traceback():
                logger.error("%s", message)
            logger.error("%s", message)  # outside a medasr command: as Prefect logs it
    finally:
        logger.handlers, logger.propagate = handlers, propagate
    assert [r.levelname for r in caplog.records] == [level, "ERROR"]
