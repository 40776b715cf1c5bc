"""MEDASR_REVIEW__REQUIRED=all over a real `medasr run` and a real `prefect server start`:
every transcript waits for a person, and that routine wait is no failure of the night.

The exit code and the flow run's state count only what the quality gate flagged (and
failures); the run row, the summary and the night's artifact show the queue's size.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from config.settings import StorageSettings
from devserver import RunningDevServer, start_devserver
from storage import open_review_store
from storage.records import ItemRecord
from tests.flows.prefect_server import MEDASR, PrefectServer, clean_env
from tests.flows.test_night_in_prefect import (
    GOOD,
    LOOP,
    TOKEN,
    _latest_flow_run,
    _night_artifact,
    _row_of,
)
from tests.recordings import write_tone_recordings

OTHER = "blood pressure one thirty over eighty. continue the same dose."


@pytest.fixture
def tone_service() -> Any:
    with start_devserver(token=TOKEN, port=0, engine="tone") as server:
        yield server


def _medasr_run(
    tmp_path: Path, server: PrefectServer, service: RunningDevServer, root: Path
) -> subprocess.CompletedProcess[str]:
    env = clean_env(
        tmp_path / "prefect-client",
        PREFECT_API_URL=server.api_url,
        MEDASR_BASE_URL=service.url,
        MEDASR_TOKEN=TOKEN,
        MEDASR_DATABASE_URL=f"sqlite:///{tmp_path / 'medasr.db'}",
        MEDASR_PIPELINE__SETTLE_S="0",
        MEDASR_REVIEW__REQUIRED="all",
    )
    return subprocess.run(
        [MEDASR, "run", str(root), "--language", "en-IN", "--quiet"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def _store_view(tmp_path: Path) -> tuple[list[ItemRecord], dict[str, int]]:
    """The review queue and the latest run row's counts, read from the store."""
    store = open_review_store(StorageSettings(database_url=f"sqlite:///{tmp_path / 'medasr.db'}"))
    try:
        with store.unit_of_work(read_only=True) as uow:
            queue = uow.reviews.queue_page(limit=50)
            [latest] = uow.runs.latest_runs(limit=1)
            return queue, dict(latest.counts)
    finally:
        store.dispose()


def _state(flow_run: Any) -> tuple[str, str, str]:
    return flow_run.state.type.value, flow_run.state.name, flow_run.state.message


@pytest.mark.slow
def test_routine_holds_complete_the_night_and_a_flagged_one_still_fails_it(
    prefect_server: PrefectServer, tone_service: RunningDevServer, tmp_path: Path
) -> None:
    routine = write_tone_recordings(tmp_path / "ward", {"a.wav": GOOD, "b.wav": OTHER})

    first = _medasr_run(tmp_path, prefect_server, tone_service, routine)

    assert first.returncode == 0, first.stderr
    flow_run = _latest_flow_run(prefect_server)
    assert _state(flow_run) == ("COMPLETED", "Completed", "2 done")
    queue, counts = _store_view(tmp_path)
    assert sorted((item.status, item.flags) for item in queue) == [("needs_review", [])] * 2
    assert counts["review_waiting"] == 2
    assert counts["needs_review"] == 0
    artifact = _night_artifact(prefect_server, flow_run.id)
    assert artifact is not None
    assert _row_of(artifact.data, "Waiting for a reviewer")[1].startswith("2 (oldest ")
    assert "patient stable" not in artifact.data

    flagged = write_tone_recordings(tmp_path / "ward 2", {"loop.wav": LOOP})

    second = _medasr_run(tmp_path, prefect_server, tone_service, flagged)

    assert second.returncode == 1, second.stderr
    flow_run = _latest_flow_run(prefect_server)
    assert _state(flow_run) == ("FAILED", "Failed", "1 held for review; 0 done")
    queue, counts = _store_view(tmp_path)
    assert [item.flags for item in queue if item.flags] == [["repetition"]]
    assert counts["review_waiting"] == 3
    assert counts["needs_review"] == 1
