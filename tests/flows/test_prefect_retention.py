"""The Prefect side of a purge, on a real `prefect server start`: medasr's flow runs older
than the period go with their artifacts and logs; newer ones and other flows' stay."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from prefect import flow
from prefect.client.schemas.actions import ArtifactCreate, LogCreate
from prefect.client.schemas.filters import (
    ArtifactFilter,
    ArtifactFilterFlowRunId,
    LogFilter,
    LogFilterFlowRunId,
)
from prefect.settings import PREFECT_API_URL, temporary_settings
from prefect.states import Scheduled

from flows.deploy import PURGE_DEPLOYMENT, build_deployments
from flows.prefect_retention import forget_flow_runs, forget_old_flow_runs
from tests.flows.prefect_server import PrefectServer

NOW = datetime.now(UTC)


@flow(name="transcribe-backlog")
def _backlog() -> None:
    """Stands for medasr's nightly flow (same name)."""


@flow(name="someone-elses-flow")
def _other() -> None:
    """A flow medasr does not own."""


async def _seed(client: Any) -> dict[str, Any]:
    async def run(which: Any, when: datetime) -> Any:
        created = await client.create_flow_run(which, state=Scheduled(scheduled_time=when))
        await client.create_artifact(
            ArtifactCreate(key=f"medasr-night-{created.id.hex[:6]}", type="markdown",
                           data="| ward/Zyxwvut.wav | failed |", flow_run_id=created.id)
        )  # fmt: skip
        await client.create_logs(
            [LogCreate(name="medasr", level=20, message="ward/Zyxwvut.wav done",
                       timestamp=when, flow_run_id=created.id)]
        )  # fmt: skip
        return created.id

    return {
        "old": await run(_backlog, NOW - timedelta(days=200)),
        "new": await run(_backlog, NOW - timedelta(days=10)),
        "other": await run(_other, NOW - timedelta(days=200)),
    }


async def _left(client: Any, ids: dict[str, Any]) -> dict[str, tuple[bool, int, int]]:
    found = {}
    for name, run_id in ids.items():
        runs = await client.read_flow_runs()
        artifacts = await client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[run_id]))
        )
        logs = await client.read_logs(
            log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[run_id]))
        )
        found[name] = (run_id in {r.id for r in runs}, len(artifacts), len(logs))
    return found


def test_old_medasr_flow_runs_go_with_their_artifacts_and_logs(
    prefect_server: PrefectServer,
) -> None:
    # Pointed at the server, so that nothing in Prefect's client starts a temporary one.
    with temporary_settings({PREFECT_API_URL: prefect_server.api_url}):
        ids = prefect_server.call(_seed)
        cleanup = asyncio.run(
            forget_flow_runs(before=NOW - timedelta(days=90), api_url=prefect_server.api_url)
        )
        left = prefect_server.call(lambda client: _left(client, ids))
    assert (cleanup.flow_runs, cleanup.artifacts) == (1, 1)
    assert left == {"old": (False, 0, 0), "new": (True, 1, 1), "other": (True, 1, 1)}


def test_without_a_prefect_server_nothing_is_deleted() -> None:
    cleanup = forget_old_flow_runs(before=NOW, api_url="")
    assert cleanup.flow_runs == 0
    assert "no Prefect server configured" in cleanup.sentence()


def test_serve_builds_a_purge_deployment_only_when_asked() -> None:
    assert len(build_deployments(source="/archive", language="en-IN")) == 2
    *_, purge = build_deployments(
        source="/archive", language="en-IN", purge_cron="30 3 * * 0", retention="12W"
    )
    assert (purge.flow_name, purge.name) == tuple(PURGE_DEPLOYMENT.split("/"))
    assert purge.parameters == {"retention": "12w"}
    assert [s.schedule.cron for s in purge.schedules or []] == ["30 3 * * 0"]


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"purge_cron": "0 25 * * *"}, "--purge-cron"),
        ({"purge_cron": "0 3 * * *", "retention": "soon"}, "--retention"),
    ],
)
def test_a_bad_purge_schedule_or_period_is_refused(kwargs: dict[str, str], fragment: str) -> None:
    from config.errors import ConfigError

    with pytest.raises(ConfigError, match=fragment):
        build_deployments(source="/archive", language="en-IN", **kwargs)
