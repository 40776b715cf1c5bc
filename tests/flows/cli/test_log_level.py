"""MEDASR_LOG_LEVEL reaches medasr's own loggers for one run, and only for that run."""

from __future__ import annotations

import logging

import pytest

from flows.cli.log_level import MEDASR_LOGGERS, medasr_log_level


@pytest.mark.parametrize("level", ["DEBUG", "WARNING"])
def test_run_level_applies_to_every_medasr_logger_then_is_restored(level: str) -> None:
    before = {name: logging.getLogger(name).level for name in MEDASR_LOGGERS}

    with medasr_log_level(level):
        during = {name: logging.getLogger(name).getEffectiveLevel() for name in MEDASR_LOGGERS}
        client_debug = logging.getLogger("service.client").isEnabledFor(logging.DEBUG)

    assert set(during.values()) == {getattr(logging, level)}
    assert client_debug is (level == "DEBUG")
    assert {name: logging.getLogger(name).level for name in MEDASR_LOGGERS} == before
