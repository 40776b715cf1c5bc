"""medasr's lines reach the flow run's own Prefect API, from whatever thread logs them."""

from __future__ import annotations

import logging
import threading
from typing import Any
from uuid import uuid4

import pytest
from prefect.logging import handlers
from prefect.settings import PREFECT_API_URL, temporary_settings

from flows.prefect_runtime.run_logs import _FlowRunLogHandler

RUN_API = "http://127.0.0.1:9/api"  # the run's server, set as PrefectApi.in_use sets it


def test_a_line_from_a_plain_thread_goes_to_the_flow_runs_api(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A thread started without the flow run's context (a decode thread) logs a line.

    Prefect picks its log worker by the API URL of the context it is called in: with
    none there, it would start a Prefect server of its own in the middle of the run.
    """
    sent_to: list[Any] = []
    monkeypatch.setattr(
        handlers, "emit_api_log", lambda log: sent_to.append(PREFECT_API_URL.value())
    )
    logger = logging.getLogger("tasks.test_run_logs")
    monkeypatch.setattr(logger, "propagate", False)
    with temporary_settings(updates={PREFECT_API_URL: RUN_API}):
        handler = _FlowRunLogHandler(uuid4())
        logger.addHandler(handler)
        try:
            logger.warning("from the event loop's thread")
            thread = threading.Thread(target=lambda: logger.warning("from a decode thread"))
            thread.start()
            thread.join()
        finally:
            logger.removeHandler(handler)
    assert sent_to == [RUN_API, RUN_API]
