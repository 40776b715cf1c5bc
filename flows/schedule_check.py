"""Whether the Prefect server has scheduled the served deployments' next runs, said once.

`medasr serve` registers its deployments; Prefect's server (its scheduler service), not
medasr, then creates their runs ahead of time. A scheduler that fails on every pass
creates none, and the runner would wait forever without a word. So a few seconds after
`serve` starts, the server is asked for each deployment's next scheduled run: each is
printed in the schedules' time zone as soon as it exists, and a deployment still without
one after `SCHEDULED_WITHIN_S` is said in one line. Serving carries on either way: the
check only informs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING
from uuid import UUID
from zoneinfo import ZoneInfo

from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import (
    DeploymentFilter,
    DeploymentFilterId,
    FlowRunFilter,
    FlowRunFilterState,
    FlowRunFilterStateType,
)
from prefect.client.schemas.objects import StateType
from prefect.client.schemas.sorting import FlowRunSort

if TYPE_CHECKING:
    from prefect.client.orchestration import PrefectClient

FIRST_LOOK_S = 5.0
# Prefect's scheduler visits recently changed deployments every 5 s and all of them
# every 60 s by default; a busy host may be slower still.
SCHEDULED_WITHIN_S = 180.0
_LOOK_EVERY_S = 5.0
_PREFIX = "medasr serve:"


async def next_run_at(client: PrefectClient, deployment_id: UUID) -> datetime | None:
    """When the deployment's earliest scheduled run is due, or None if it has none."""
    runs = await client.read_flow_runs(
        deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[deployment_id])),
        flow_run_filter=FlowRunFilter(
            state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.SCHEDULED]))
        ),
        sort=FlowRunSort.EXPECTED_START_TIME_ASC,
        limit=1,
    )
    return runs[0].expected_start_time if runs else None


async def check_schedules(
    deployments: Mapping[str, UUID],
    *,
    timezone: str,
    within_s: float = SCHEDULED_WITHIN_S,
    first_look_s: float = FIRST_LOOK_S,
) -> None:
    """Print each deployment's next run in `timezone` once the server has scheduled it;
    one line for those still unscheduled after `within_s`. Never raises but cancellation."""
    zone = ZoneInfo(timezone)
    waiting = dict(deployments)
    await asyncio.sleep(first_look_s)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within_s - first_look_s
    failure: Exception | None = None
    while waiting:
        try:
            await _say_scheduled(waiting, zone)
        except Exception as exc:  # informing only: serving goes on; a busy server may answer later
            failure = exc
        if waiting and loop.time() >= deadline:
            print(_unscheduled_line(list(waiting), within_s=within_s, failure=failure), flush=True)
            return
        await asyncio.sleep(_LOOK_EVERY_S)


async def _say_scheduled(waiting: dict[str, UUID], zone: ZoneInfo) -> None:
    """Print the next run of each deployment in `waiting` that has one; forget those."""
    async with get_client() as client:
        for name, deployment_id in list(waiting.items()):
            due = await next_run_at(client, deployment_id)
            if due is not None:
                del waiting[name]
                print(f"{_PREFIX} {name} next run {_local(due, zone)}", flush=True)


def _unscheduled_line(names: list[str], *, within_s: float, failure: Exception | None) -> str:
    if failure is not None:
        return (
            f"{_PREFIX} could not read the next runs of {', '.join(names)} in {within_s:.0f} s "
            f"({type(failure).__name__}); serving on"
        )
    return (
        f"{_PREFIX} the Prefect server has scheduled no run of {', '.join(names)} after "
        f"{within_s:.0f} s: its scheduler is not working (see the server's log); serving on"
    )


def _local(moment: datetime, zone: ZoneInfo) -> str:
    return moment.astimezone(zone).strftime("%Y-%m-%d %H:%M %Z")
