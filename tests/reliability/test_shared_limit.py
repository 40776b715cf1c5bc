"""One request limit for many workers: three `medasr run` processes, one Prefect server.

Each worker may send 8 at once (MEDASR_CONCURRENCY=8); together they hold the Prefect
global concurrency limit `medasr-requests` of 4 (MEDASR_GLOBAL_CONCURRENCY=4), and the
service (devserver --capacity 4) throttles anything beyond 4 in flight. Real
`prefect server start`, real PostgreSQL, real sockets. Without the shared limit the
three workers would put up to 24 requests in flight.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from prefect.client.orchestration import PrefectClient
from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate

from tests.flows.prefect_server import running_prefect_server
from tests.reliability.corpus import write_tone_corpus
from tests.reliability.evidence import by_sha, items
from tests.reliability.harness import run_side_by_side

FILES = 300
WORKERS = 3
SHARED = 4


def _create_limit(api_url: str, *, limit: int) -> None:
    async def create() -> None:
        async with PrefectClient(api=api_url) as client:
            await client.create_global_concurrency_limit(
                GlobalConcurrencyLimitCreate(name="medasr-requests", limit=limit)
            )

    asyncio.run(create())


def _read_limit(api_url: str) -> int:
    async def read() -> int:
        async with PrefectClient(api=api_url) as client:
            found = await client.read_global_concurrency_limit_by_name("medasr-requests")
            return int(found.limit)

    return asyncio.run(read())


@pytest.mark.slow
@pytest.mark.postgres
def test_three_workers_keep_the_shared_limit_and_are_never_throttled(
    tmp_path: Path, fresh_postgres_url: str, tone_devserver, medasr_for, figures
) -> None:
    started = time.monotonic()
    corpus = tmp_path / "corpus"
    write_tone_corpus(corpus, FILES, seed=13)
    server = tone_devserver(latency_ms=60, capacity=SHARED, retry_after_s=1)
    with running_prefect_server(tmp_path / "prefect-server") as prefect:
        _create_limit(prefect.api_url, limit=2)  # an old setting: medasr updates it to 4
        env = {
            "PREFECT_API_URL": prefect.api_url,
            "MEDASR_CONCURRENCY": "8",
            "MEDASR_GLOBAL_CONCURRENCY": str(SHARED),
            "MEDASR_BATCH_SIZE": "20",
            "MEDASR_LOG_LEVEL": "INFO",
        }
        workers = [medasr_for(server, fresh_postgres_url, **env) for _ in range(WORKERS)]
        finished = run_side_by_side(workers, "run", str(corpus), "--language", "en-IN")
        limit_after = _read_limit(prefect.api_url)

    assert limit_after == SHARED
    logs = "".join(done.output for done in finished)
    assert "'medasr-requests' from 2 to 4 slots" in logs or "'medasr-requests' (4 slots)" in logs
    entries = server.ledger.entries()
    assert [e for e in entries if e.status != 200] == []  # 0 throttled, nothing else either
    peak = max(e.in_flight or 0 for e in entries)
    assert peak <= SHARED
    assert server.state.capacity.peak_in_flight == peak
    rows = items(fresh_postgres_url)
    assert sorted(r["status"] for r in rows) == ["done"] * FILES
    assert set(map(len, by_sha(entries).values())) == {1}  # every file sent once
    shares = [int(done.summary().get("files_done", 0)) for done in finished]
    assert sum(shares) == FILES
    figures(
        "shared-limit",
        files=FILES,
        workers=WORKERS,
        each_concurrency=8,
        global_concurrency=SHARED,
        requests=len(entries),
        throttled=sum(e.status == 429 for e in entries),
        peak_in_flight=peak,
        files_done_per_worker=shares,
        wall_s=round(time.monotonic() - started, 1),
    )
