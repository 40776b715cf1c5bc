"""medasr's flow runs in Prefect older than the retention period: deleted through the API.

Prefect's database holds no transcript text, but it holds recording names in log lines
and in the night's artifacts. `medasr purge` deletes, from the Prefect server it is
pointed at (PREFECT_API_URL), the flow runs of medasr's flows expected to start before
the cut-off (every run has an expected start; one that never started has no start
time): deleting a flow run deletes its task runs, states and logs; its artifacts are
deleted first, by flow run. Only medasr's flows are touched, which Prefect's own
server-wide vacuum service cannot promise. Without a configured server (the temporary
one of a `medasr run` is gone when the run ends) there is nothing to delete.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime

FLOW_NAME = "purge-recordings"
MEDASR_FLOWS = ("transcribe-backlog", "rerun-failures", FLOW_NAME)
_PAGE = 200


@dataclass(frozen=True)
class PrefectCleanup:
    """What was deleted from Prefect, or why nothing was."""

    flow_runs: int = 0
    artifacts: int = 0
    skipped_reason: str | None = None

    def sentence(self) -> str:
        """One line for the command's output."""
        if self.skipped_reason:
            return f"prefect: {self.skipped_reason}"
        return (
            f"prefect: deleted {self.flow_runs} flow run(s) of medasr (with their logs) and "
            f"{self.artifacts} artifact(s) older than the period"
        )


def forget_old_flow_runs(*, before: datetime, api_url: str | None = None) -> PrefectCleanup:
    """Delete medasr's flow runs started before `before` (and their artifacts and logs)
    from the configured Prefect server; nothing when none is configured."""
    from prefect.settings import Settings as PrefectSettings

    # Read afresh: PREFECT_API_URL.value() keeps the first value the process saw.
    url = api_url if api_url is not None else PrefectSettings().api.url
    if not url:
        return PrefectCleanup(skipped_reason="no Prefect server configured (PREFECT_API_URL)")
    return asyncio.run(forget_flow_runs(before=before, api_url=url))


async def forget_flow_runs(*, before: datetime, api_url: str) -> PrefectCleanup:
    """Delete medasr's flow runs expected to start before `before`, their artifacts first
    (a flow run's deletion takes its task runs, states and logs with it)."""
    from prefect.client.orchestration import PrefectClient
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterFlowRunId,
        FlowFilter,
        FlowFilterName,
        FlowRunFilter,
        FlowRunFilterExpectedStartTime,
    )

    runs = artifacts = 0
    async with PrefectClient(api=api_url) as client:
        while True:
            found = await client.read_flow_runs(
                flow_filter=FlowFilter(name=FlowFilterName(any_=list(MEDASR_FLOWS))),
                flow_run_filter=FlowRunFilter(
                    expected_start_time=FlowRunFilterExpectedStartTime(before_=before)
                ),
                limit=_PAGE,
            )
            if not found:
                return PrefectCleanup(flow_runs=runs, artifacts=artifacts)
            ids = [run.id for run in found]
            for artifact in await client.read_artifacts(
                artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=ids))
            ):
                await client.delete_artifact(artifact.id)
                artifacts += 1
            for run_id in ids:
                await client.delete_flow_run(run_id)
                runs += 1
