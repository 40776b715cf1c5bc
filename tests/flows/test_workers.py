"""Past one machine: a Prefect server, two process workers, one PostgreSQL store.

The deployment comes from prefect.yaml (`prefect deploy --all`, as docs/operations.md says);
two flow runs of it over the same 200 files run at once on two workers, and every
file is transcribed exactly once: the devserver's ledger shows one successful
request per chunk.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from prefect.client.schemas.filters import (
    ArtifactFilter,
    ArtifactFilterKey,
    FlowRunFilter,
    FlowRunFilterId,
)
from sqlalchemy import create_engine, func, select

from config.settings import StorageSettings
from devserver import RunningDevServer, start_devserver
from storage import open_store
from storage.database import normalize_database_url
from storage.models import ChunkRow, Item
from storage.records import SourceFile
from tests.flows.prefect_server import (
    MEDASR,
    PREFECT,
    REPO,
    Background,
    PrefectServer,
    clean_env,
    flow_run_final_state,
    start_background,
    wait_until,
)
from tests.recordings import write_tone_recordings

pytestmark = pytest.mark.postgres

TOKEN = "workers-test-token"
FILES = 200
POOL = "medasr-pool"
NIGHTLY = "transcribe-backlog/nightly-backlog-pool"
RERUN = "rerun-failures/rerun-failures-pool"


def _text(index: int) -> str:
    return f"note {index}. seen today."


@pytest.fixture(scope="module")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> Path:
    texts = {f"day{i % 7}/dictation-{i:03d}.wav": _text(i) for i in range(FILES)}
    return write_tone_recordings(tmp_path_factory.mktemp("archive"), texts)


@pytest.fixture
def slow_service() -> Iterator[RunningDevServer]:
    # Latency keeps both flow runs busy long enough to overlap on the same backlog.
    with start_devserver(token=TOKEN, port=0, engine="tone", latency_ms=100) as server:
        yield server


def _prefect(*args: str, env: dict[str, str], cwd: Path) -> str:
    result = subprocess.run(
        [PREFECT, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, f"prefect {' '.join(args)}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def _online_workers(server: PrefectServer) -> int | None:
    async def read(client: Any) -> int | None:
        workers = await client.read_workers_for_work_pool(POOL)
        online = [w for w in workers if str(w.status).endswith("ONLINE")]
        return len(online) if len(online) >= 2 else None

    return server.call(read)


def _start_runs(server: PrefectServer, *, parameters: dict[str, Any], count: int) -> list[Any]:
    async def trigger(client: Any) -> list[Any]:
        deployment = await client.read_deployment_by_name(NIGHTLY)
        runs = [
            await client.create_flow_run_from_deployment(deployment.id, parameters=parameters)
            for _ in range(count)
        ]
        return [run.id for run in runs]

    return server.call(trigger)


def _files_done(server: PrefectServer, flow_run_id: Any) -> int:
    """files_done from the run's summary artifact."""

    async def read(client: Any) -> Any:
        (artifact,) = await client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["medasr-summary"])),
            flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])),
        )
        return artifact.data

    data = server.call(read)
    rows = json.loads(data) if isinstance(data, str) else data
    return int(next(row["value"] for row in rows if row["metric"] == "files_done"))


def _deployments(server: PrefectServer) -> dict[str, tuple[str | None, list[str]]]:
    """Work pool and crons of both deployments in prefect.yaml."""

    async def read(client: Any) -> dict[str, tuple[str | None, list[str]]]:
        found = {}
        for name in (NIGHTLY, RERUN):
            deployment = await client.read_deployment_by_name(name)
            crons = [s.schedule.cron for s in deployment.schedules]
            found[name] = (deployment.work_pool_name, crons)
        return found

    return server.call(read)


def _set_up_cluster(server: PrefectServer, *, database_url: str, tmp_path: Path) -> None:
    """docs/operations.md's commands: schema, work pool, `prefect deploy --all`."""
    cli_env = clean_env(tmp_path / "prefect-cli", PREFECT_API_URL=server.api_url)
    upgrade = subprocess.run(
        [MEDASR, "db", "upgrade"],
        env=cli_env | {"MEDASR_DATABASE_URL": database_url},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert upgrade.returncode == 0, upgrade.stdout + upgrade.stderr
    _prefect("work-pool", "create", POOL, "--type", "process", env=cli_env, cwd=tmp_path)
    # Without MEDASR_HOME here, each worker resolves the pull step from its own environment.
    _prefect("--no-prompt", "deploy", "--all", env=cli_env, cwd=REPO)
    assert _deployments(server) == {
        NIGHTLY: (POOL, ["0 1 * * *"]),
        RERUN: (POOL, ["0 */6 * * *"]),
    }


@contextmanager
def running_workers(env: dict[str, str], *, log_dir: Path) -> Iterator[list[Background]]:
    """Two `prefect worker start` processes, one flow run at a time each; stopped after."""
    workers: list[Background] = []
    try:
        for name in ("worker-a", "worker-b"):
            args = [PREFECT, "worker", "start", "--pool", POOL, "--limit", "1", "--name", name]
            workers.append(
                start_background(args, env=env, cwd=log_dir, log_path=log_dir / f"{name}.log")
            )
        yield workers
    finally:
        for worker in workers:
            worker.stop()


@pytest.mark.slow
def test_two_workers_transcribe_each_file_exactly_once(
    prefect_server: PrefectServer,
    slow_service: RunningDevServer,
    recordings: Path,
    fresh_postgres_url: str,
    tmp_path: Path,
) -> None:
    _set_up_cluster(prefect_server, database_url=fresh_postgres_url, tmp_path=tmp_path)
    worker_env = clean_env(
        tmp_path / "prefect-workers",
        PREFECT_API_URL=prefect_server.api_url,
        PREFECT_WORKER_QUERY_SECONDS="1",
        MEDASR_HOME=str(REPO),
        MEDASR_BASE_URL=slow_service.url,
        MEDASR_TOKEN=TOKEN,
        MEDASR_DATABASE_URL=fresh_postgres_url,
        MEDASR_PIPELINE__SETTLE_S="0",
        MEDASR_BATCH_SIZE="10",
        MEDASR_CONCURRENCY="2",
    )
    with running_workers(worker_env, log_dir=tmp_path) as workers:
        wait_until(
            lambda: _online_workers(prefect_server),
            timeout_s=60,
            what="two online workers",
            alive=[*workers, prefect_server.background],
        )
        parameters = {"source": str(recordings), "language": "en-IN"}
        run_ids = _start_runs(prefect_server, parameters=parameters, count=2)
        for run_id in run_ids:
            state = flow_run_final_state(prefect_server, run_id, timeout_s=240, alive=workers)
            logs = "\n---\n".join(w.log() for w in workers)
            assert state.is_completed(), f"{state.type}: {state.message}\n{logs}"
    done_per_run = [_files_done(prefect_server, run_id) for run_id in run_ids]
    assert sum(done_per_run) == FILES
    assert min(done_per_run) > 0, f"the runs did not share the backlog: {done_per_run}"
    _assert_store_exactly_once(fresh_postgres_url, recordings)
    _assert_ledger_one_success_per_chunk(slow_service, fresh_postgres_url)


def _assert_store_exactly_once(database_url: str, recordings: Path) -> None:
    engine = create_engine(normalize_database_url(database_url))
    try:
        with engine.connect() as connection:
            items = connection.execute(
                select(Item.source_uri, Item.status, Item.attempts, Item.text)
            ).all()
    finally:
        engine.dispose()
    expected = {f"dictation-{i:03d}.wav": ("done", 1, _text(i)) for i in range(FILES)}
    assert len(items) == FILES
    assert {uri.rsplit("/", 1)[1]: (s, a, t) for uri, s, a, t in items} == expected
    assert all(str(recordings) in uri for uri, *_ in items)


def _assert_ledger_one_success_per_chunk(server: RunningDevServer, database_url: str) -> None:
    engine = create_engine(normalize_database_url(database_url))
    try:
        with engine.connect() as connection:
            chunks = connection.execute(
                select(func.count()).select_from(ChunkRow).where(ChunkRow.status == "done")
            ).scalar_one()
    finally:
        engine.dispose()
    entries = server.ledger.entries()
    assert Counter(e.status for e in entries) == {200: len(entries)}
    sent = Counter(e.sha256 for e in entries)
    assert sent.most_common(1)[0][1] == 1, "a chunk was sent twice"
    assert len(sent) == chunks >= FILES


def test_two_runs_register_the_same_new_files_at_once(postgres_store_url: str) -> None:
    """The second run's INSERT waits on the first's uncommitted rows, then skips them."""
    store = open_store(StorageSettings(database_url=postgres_store_url))
    files = [
        SourceFile(uri=f"file:///archive/{i}.wav", size_bytes=10, version="1") for i in range(20)
    ]
    first_listed = threading.Barrier(2, timeout=10)
    results: dict[str, Any] = {}

    def register(name: str) -> None:
        try:
            if name == "second":
                first_listed.wait()
            with store.unit_of_work() as uow:
                results[name] = uow.items.register_items(files, language="en-IN")
                if name == "first":
                    first_listed.wait()
                    time.sleep(0.3)  # hold the rows uncommitted while the second inserts
        except Exception as exc:
            results[name] = exc

    threads = [threading.Thread(target=register, args=(name,)) for name in ("first", "second")]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        with store.unit_of_work(read_only=True) as uow:
            counts = {c.status: c.items for c in uow.item_queries.status_counts()}
    finally:
        store.dispose()
    assert (results["first"].new, results["first"].unchanged) == (20, 0)
    assert (results["second"].new, results["second"].unchanged) == (0, 20)
    assert counts == {"pending": 20}
