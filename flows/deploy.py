"""`medasr serve`: the nightly backlog and the rerun of failures as scheduled deployments.

Schedules need a Prefect server (`prefect server start`, then PREFECT_API_URL);
the ephemeral API used by `medasr run` forgets them when the process ends.
"""

from __future__ import annotations

from typing import Annotated, cast

import typer
from prefect import serve
from prefect.deployments.runner import RunnerDeployment
from prefect.schedules import Cron

from config.errors import ConfigError
from flows.backlog import transcribe_backlog
from flows.rerun import rerun_failures
from service.contract import LANGUAGES, is_supported_language

NIGHTLY_CRON = "0 1 * * *"
RERUN_CRON = "0 */6 * * *"


def build_deployments(
    *,
    source: str,
    language: str,
    nightly_cron: str = NIGHTLY_CRON,
    rerun_cron: str = RERUN_CRON,
    timezone: str | None = None,
) -> list[RunnerDeployment]:
    """The two deployments; parameters hold no secret (settings come from MEDASR_*)."""
    if not is_supported_language(language):
        raise ConfigError(f"unsupported language {language!r}; use one of: {', '.join(LANGUAGES)}")
    # to_deployment dispatches to a coroutine only inside a running event loop.
    nightly = cast(
        RunnerDeployment,
        transcribe_backlog.to_deployment(
            name="nightly-backlog",
            schedules=[Cron(nightly_cron, timezone=timezone)],
            parameters={"source": source, "language": language},
            description="Transcribe new and changed recordings under the source.",
            tags=["medasr"],
            concurrency_limit=1,
        ),
    )
    rerun = cast(
        RunnerDeployment,
        rerun_failures.to_deployment(
            name="rerun-failures",
            schedules=[Cron(rerun_cron, timezone=timezone)],
            parameters={"language": language},
            description="Re-queue due retryable failures and transcribe them.",
            tags=["medasr"],
            concurrency_limit=1,
        ),
    )
    return [nightly, rerun]


def serve_command(
    source: Annotated[str, typer.Argument(help="Folder or bucket the nightly run scans.")],
    language: Annotated[str, typer.Option("--language", "-l", help="Language code.")],
    nightly_cron: Annotated[str, typer.Option(help="Cron of the backlog run.")] = NIGHTLY_CRON,
    rerun_cron: Annotated[str, typer.Option(help="Cron of the rerun of failures.")] = RERUN_CRON,
    timezone: Annotated[str | None, typer.Option(help="IANA time zone of the crons.")] = None,
) -> None:
    """Register the nightly and rerun deployments with their schedules and serve them."""
    deployments = build_deployments(
        source=source,
        language=language,
        nightly_cron=nightly_cron,
        rerun_cron=rerun_cron,
        timezone=timezone,
    )
    serve(*deployments)
