"""MEDASR_REVIEW__REQUIRED=measured over a real `medasr run` and a real Prefect server: an
author never reviewed waits for a person (`new author`), the night is no failure, and
the run row, the queue and the night's artifact say why each waits."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from config.settings import StorageSettings
from devserver import RunningDevServer, start_devserver
from storage import open_review_store
from tests.flows.prefect_server import MEDASR, PrefectServer, clean_env
from tests.flows.test_night_in_prefect import (
    GOOD,
    TOKEN,
    _latest_flow_run,
    _night_artifact,
    _row_of,
)
from tests.flows.test_review_all_night import OTHER
from tests.recordings import write_tone_recordings


@pytest.fixture
def tone_service() -> Iterator[RunningDevServer]:
    with start_devserver(token=TOKEN, port=0, engine="tone") as server:
        yield server


@pytest.mark.slow
def test_a_new_author_waits_and_the_night_completes(
    prefect_server: PrefectServer, tone_service: RunningDevServer, tmp_path: Path
) -> None:
    root = write_tone_recordings(tmp_path / "ward", {"a.wav": GOOD, "b.wav": OTHER})
    (root / "medasr.csv").write_text(
        "path,author,department\na.wav,dr-new,cardio\nb.wav,dr-new,cardio\n"
    )
    env = clean_env(
        tmp_path / "prefect-client",
        PREFECT_API_URL=prefect_server.api_url,
        MEDASR_BASE_URL=tone_service.url,
        MEDASR_TOKEN=TOKEN,
        MEDASR_DATABASE_URL=f"sqlite:///{tmp_path / 'medasr.db'}",
        MEDASR_PIPELINE__SETTLE_S="0",
        MEDASR_REVIEW__REQUIRED="measured",
    )
    done = subprocess.run(
        [MEDASR, "run", str(root), "--language", "en-IN", "--quiet"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    listed = subprocess.run(
        [MEDASR, "review"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    rows = [line.split("\t") for line in listed.stdout.splitlines()[1:]]
    assert sorted(row[-1] for row in rows) == ["new author", "new author"]
    store = open_review_store(StorageSettings(database_url=f"sqlite:///{tmp_path / 'medasr.db'}"))
    try:
        with store.unit_of_work(read_only=True) as uow:
            [latest] = uow.runs.latest_runs(limit=1)
    finally:
        store.dispose()
    assert (latest.counts["review_held_new"], latest.counts["review_waiting"]) == (2, 2)
    artifact = _night_artifact(prefect_server, _latest_flow_run(prefect_server).id)
    assert artifact is not None
    assert _row_of(artifact.data, "Held for review by this run, by reason")[1] == "new 2"
