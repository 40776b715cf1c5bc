"""Reliability suite: the real `medasr` command against the devserver over loopback.

Fixtures (`prefect_template` and `prefect_api` come from tests/prefect_servers.py: a part
whose subject is not Prefect's own start-up passes `prefect_api` to skip the ephemeral
server; parts that inspect PREFECT_HOME or kill medasr with its Prefect children keep it):
- `medasr_for(devserver, database_url, **env)`: a `harness.Medasr` pointed at a devserver.
- `tone_devserver(**config)`: a devserver with the tone engine and a ledger file.
- `run_against_peer(answer, seed=...)`: one `medasr run` against a canned peer standing in
  for the service (tests/reliability/peer_run.py).
- `figures(part, **numbers)`: keeps a part's measured figures in pytest's cache
  (`pytest --cache-show 'medasr-reliability/*'`) for docs/RELIABILITY.md.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from devserver import RunningDevServer, start_devserver
from tests.reliability.harness import TOKEN, Medasr
from tests.reliability.peer_run import PeerRun, peer_runner


@pytest.fixture
def tone_devserver(tmp_path: Path) -> Iterator[Callable[..., RunningDevServer]]:
    started: list[RunningDevServer] = []

    def make(**config: Any) -> RunningDevServer:
        config.setdefault("token", TOKEN)
        config.setdefault("engine", "tone")
        config.setdefault("ledger_path", tmp_path / f"ledger-{len(started)}.jsonl")
        server = start_devserver(port=0, **config)
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop()


@pytest.fixture
def medasr_for(tmp_path: Path, prefect_template: Path) -> Callable[..., Medasr]:
    count = 0

    def make(server: RunningDevServer, database_url: str, **env: str) -> Medasr:
        nonlocal count
        count += 1
        settings = {
            "MEDASR_BASE_URL": server.url,
            "MEDASR_TOKEN": server.token,
            "MEDASR_DATABASE_URL": database_url,
            # Retries in tenths of a second, not the production half-second base.
            "MEDASR_SERVICE__RETRY_INITIAL_BACKOFF_S": "0.05",
            "MEDASR_SERVICE__RETRY_MAX_BACKOFF_S": "0.5",
        }
        return Medasr(
            root=tmp_path / f"medasr-{count}",
            prefect_template=prefect_template,
            env=settings | env,
        )

    return make


@pytest.fixture
def run_against_peer(
    tmp_path: Path,
    tone_devserver: Callable[..., RunningDevServer],
    medasr_for: Callable[..., Medasr],
    prefect_api: dict[str, str],
) -> Callable[..., PeerRun]:
    return peer_runner(
        tmp_path, tone_devserver=tone_devserver, medasr_for=medasr_for, prefect_api=prefect_api
    )


@pytest.fixture
def figures(request: pytest.FixtureRequest) -> Callable[..., None]:
    def record(part: str, **numbers: Any) -> None:
        cache = getattr(request.config, "cache", None)  # absent with -p no:cacheprovider
        if cache is not None:
            cache.set(f"medasr-reliability/{part}", numbers)
        print(f"\nreliability figures {part}: {json.dumps(numbers)}")

    return record
