"""MEDASR_LOG_LEVEL: the level of medasr's own loggers (Prefect's have PREFECT_LOGGING_LEVEL)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from flows.prefect_runtime.loggers import MEDASR_LOGGERS

__all__ = ["MEDASR_LOGGERS", "medasr_log_level"]


@contextmanager
def medasr_log_level(level: str) -> Iterator[None]:
    """Set medasr's loggers to `level` ("DEBUG" ... "ERROR") for one run, then restore them."""
    loggers = [logging.getLogger(name) for name in MEDASR_LOGGERS]
    previous = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(level)
    try:
        yield
    finally:
        for logger, old in zip(loggers, previous, strict=True):
            logger.setLevel(old)
