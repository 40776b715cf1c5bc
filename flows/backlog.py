"""The nightly deployment's flow: `transcribe_backlog` (`medasr serve`, prefect.yaml).

It bootstraps its Run from its parameters and runs the backlog's plain body,
`run_backlog` (flows/backlog_run.py, where `medasr run`'s own flow over the same body
lives too), then logs the audit trail's anchor.
"""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger
from prefect.client.schemas.objects import State

from audit.verify import anchor_line
from flows.backlog_run import FLOW_NAME, run_backlog
from flows.reporting.run_names import name_from_parameters
from flows.reporting.states import final_state
from flows.setup.bootstrap import Run, backlog_request, bootstrap, settings_for
from storage.errors import StoreError

__all__ = ["FLOW_NAME", "transcribe_backlog"]


@flow(
    name=FLOW_NAME,
    flow_run_name=name_from_parameters("backlog"),
    log_prints=False,
    validate_parameters=True,
)
async def transcribe_backlog(
    source: str,
    language: str | None = None,
    limit: int | None = None,
    concurrency: int | None = None,
    encrypt: bool | None = None,
    batch_size: int | None = None,
    include: list[str] | None = None,
    exclude: list[str] | None = None,
    manifest: str | None = None,
    max_audio_hours: float | None = None,
) -> State[Any]:
    """Transcribe every new or changed file under `source`; ends in the state its summary
    says (flows/reporting/states.py), the summary its data.

    With MEDASR_DELIVER=true, done transcripts are then delivered (flows/deliver_step.py).
    `max_audio_hours`: the run's audio cap (MEDASR_PIPELINE__MAX_AUDIO_HOURS_PER_RUN).
    """
    request = backlog_request(
        source=source,
        language=language,
        limit=limit,
        concurrency=concurrency,
        encrypt=encrypt,
        batch_size=batch_size,
        include=include,
        exclude=exclude,
        manifest=manifest,
        max_audio_hours=max_audio_hours,
    )
    with bootstrap(settings_for(request), request) as run:
        summary = await run_backlog(run)
        _log_anchor(run)
        return final_state(summary)


def _log_anchor(run: Run) -> None:
    """Each night's log holds the trail's anchor: a site has one without taking it."""
    try:
        get_run_logger().info("%s", anchor_line(run.store))
    except StoreError as exc:  # the night's work is done; the anchor waits a night
        get_run_logger().warning("no audit anchor tonight: %s", exc.message)
