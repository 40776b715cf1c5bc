"""`medasr serve`: the nightly backlog and the rerun of failures as scheduled deployments,
and with `--purge-cron` the purge of recordings older than `--retention`.

Schedules need a Prefect server (`prefect server start`, then PREFECT_API_URL);
the ephemeral API used by `medasr run` forgets them when the process ends, so
`medasr serve` refuses to start without one.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, cast

import typer
from prefect.client.schemas.schedules import CronSchedule
from prefect.deployments.runner import RunnerDeployment
from prefect.schedules import Cron
from prefect.settings import PREFECT_API_URL
from pydantic import ValidationError

from config.errors import ConfigError
from flows.backlog import transcribe_backlog
from flows.prefect_runtime.prefect_api import health_failure
from flows.purge import purge_recordings_flow
from flows.rerun import rerun_failures
from flows.serving import serve_deployments
from service.contract import LANGUAGES, is_supported_language
from tasks.retention.durations import parse_retention

NIGHTLY_CRON = "0 1 * * *"
RERUN_CRON = "0 */6 * * *"
DEFAULT_TIMEZONE = "UTC"
NIGHTLY_DEPLOYMENT = "transcribe-backlog/nightly-backlog"
RERUN_DEPLOYMENT = "rerun-failures/rerun-failures"
PURGE_DEPLOYMENT = "purge-recordings/purge"
DEFAULT_RETENTION = "90d"


def check_schedule(*, cron: str, timezone: str, option: str) -> None:
    """Validate a cron string and time zone the way the Prefect server will; raises ConfigError."""
    try:
        CronSchedule(cron=cron, timezone=timezone)
    except ValidationError as exc:
        fields = {str(error["loc"][0]) for error in exc.errors() if error["loc"]}
        if "timezone" in fields:
            raise ConfigError(
                f"--timezone {timezone!r} is not an IANA time zone (e.g. UTC, Asia/Kolkata)"
            ) from None
        raise ConfigError(
            f"{option} {cron!r} is not a valid cron expression: use five fields, "
            "minute hour day-of-month month day-of-week, e.g. '0 1 * * *'"
        ) from None


def build_deployments(
    *,
    source: str,
    language: str,
    nightly_cron: str = NIGHTLY_CRON,
    rerun_cron: str = RERUN_CRON,
    timezone: str = DEFAULT_TIMEZONE,
    purge_cron: str | None = None,
    retention: str = DEFAULT_RETENTION,
    max_audio_hours: float | None = None,
) -> list[RunnerDeployment]:
    """The two deployments, and the purge with `purge_cron`; parameters hold no secret
    (settings come from MEDASR_*).

    Raises ConfigError for an unsupported language, a bad cron string or time zone.
    """
    if not is_supported_language(language):
        raise ConfigError(f"unsupported language {language!r}; use one of: {', '.join(LANGUAGES)}")
    check_schedule(cron=nightly_cron, timezone=timezone, option="--nightly-cron")
    check_schedule(cron=rerun_cron, timezone=timezone, option="--rerun-cron")
    # The audio cap of each night's runs (MEDASR_PIPELINE__MAX_AUDIO_HOURS_PER_RUN otherwise).
    cap = {} if max_audio_hours is None else {"max_audio_hours": max_audio_hours}
    nightly = _nightly_deployment(source, language, cron=nightly_cron, timezone=timezone, cap=cap)
    rerun = _rerun_deployment(language, cron=rerun_cron, timezone=timezone, cap=cap)
    if purge_cron is None:
        return [nightly, rerun]
    return [nightly, rerun, _purge_deployment(purge_cron, retention=retention, timezone=timezone)]


def _nightly_deployment(
    source: str, language: str, *, cron: str, timezone: str, cap: dict[str, float]
) -> RunnerDeployment:
    """The nightly backlog run over `source` (then the delivery, when it is on)."""
    # to_deployment dispatches to a coroutine only inside a running event loop.
    return cast(
        RunnerDeployment,
        transcribe_backlog.to_deployment(
            name="nightly-backlog",
            schedules=[Cron(cron, timezone=timezone)],
            parameters={"source": source, "language": language, **cap},
            # With MEDASR_DELIVER=true the same flow then delivers (flows/deliver_step.py).
            description="Transcribe new and changed recordings under the source, then "
            "deliver done transcripts when MEDASR_DELIVER=true.",
            tags=["medasr"],
            concurrency_limit=1,
        ),
    )


def _rerun_deployment(
    language: str, *, cron: str, timezone: str, cap: dict[str, float]
) -> RunnerDeployment:
    """The rerun of due retryable failures."""
    return cast(
        RunnerDeployment,
        rerun_failures.to_deployment(
            name="rerun-failures",
            schedules=[Cron(cron, timezone=timezone)],
            parameters={"language": language, **cap},
            description="Re-queue due retryable failures and transcribe them.",
            tags=["medasr"],
            concurrency_limit=1,
        ),
    )


def _purge_deployment(cron: str, *, retention: str, timezone: str) -> RunnerDeployment:
    """The purge deployment; raises ConfigError for a bad cron or period."""
    check_schedule(cron=cron, timezone=timezone, option="--purge-cron")
    period = parse_retention(retention, option="--retention")
    return cast(
        RunnerDeployment,
        purge_recordings_flow.to_deployment(
            name="purge",
            schedules=[Cron(cron, timezone=timezone)],
            parameters={"retention": period.text},
            description="Purge the patient data of recordings finished longer ago than the "
            "retention period; each page's receipt goes to the audit trail.",
            tags=["medasr"],
            concurrency_limit=1,
        ),
    )


def require_prefect_server() -> str:
    """The API URL of a reachable Prefect server; raises ConfigError naming what to do."""
    api_url = PREFECT_API_URL.value()
    if not api_url:
        raise ConfigError(
            "schedules need a Prefect server: run `prefect server start` and set "
            "PREFECT_API_URL (e.g. http://127.0.0.1:4200/api)"
        )
    failure = asyncio.run(health_failure())
    if failure is not None:
        raise ConfigError(
            f"no Prefect server answers at PREFECT_API_URL={api_url} "
            f"({type(failure).__name__}); start it with `prefect server start`"
        )
    return str(api_url)


def serve_command(
    source: Annotated[str, typer.Argument(help="Folder or bucket the nightly run scans.")],
    language: Annotated[str, typer.Option("--language", "-l", help="Language code.")],
    nightly_cron: Annotated[str, typer.Option(help="Cron of the backlog run.")] = NIGHTLY_CRON,
    rerun_cron: Annotated[str, typer.Option(help="Cron of the rerun of failures.")] = RERUN_CRON,
    timezone: Annotated[str, typer.Option(help="IANA time zone of the crons.")] = DEFAULT_TIMEZONE,
    purge_cron: Annotated[
        str | None, typer.Option(help="Cron of the purge (none: no purge deployment).")
    ] = None,
    retention: Annotated[
        str, typer.Option(help="What the purge removes: recordings older than 90d, 12w, 1y.")
    ] = DEFAULT_RETENTION,
    max_audio_hours: Annotated[
        float | None,
        typer.Option(
            min=0.001,
            metavar="H",
            help="Most audio hours each nightly and rerun run sends (the rest waits).",
        ),
    ] = None,
) -> None:
    """Register the nightly and rerun deployments with their schedules and serve them.

    Needs a Prefect server (PREFECT_API_URL); runs until interrupted. With --purge-cron,
    a purge deployment too: recordings finished longer ago than --retention lose their
    patient data (`medasr purge`).
    """
    deployments = build_deployments(
        source=source,
        language=language,
        nightly_cron=nightly_cron,
        rerun_cron=rerun_cron,
        timezone=timezone,
        purge_cron=purge_cron,
        retention=retention,
        max_audio_hours=max_audio_hours,
    )
    require_prefect_server()
    serve_deployments(*deployments, timezone=timezone)
