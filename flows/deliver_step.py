"""The nightly deployment's delivery step: after the backlog, when MEDASR_DELIVER=true."""

from __future__ import annotations

from prefect import get_run_logger
from prefect.utilities.annotations import quote

from config.settings import Settings
from flows.reporting.summary import DeliveryCounts
from storage.interface import UnitOfWorkFactory
from tasks.steps import deliver_task


async def deliver_after_backlog(
    settings: Settings, store: UnitOfWorkFactory, *, language: str | None
) -> DeliveryCounts:
    """Deliver the language's done transcripts; returns counts for the run summary.

    A delivery stopped by credentials or a setting is reported in the counts and the
    log; the transcripts stay recorded and the next run delivers them.
    """
    # The delivery wing still answers with a plain dict; it is read here, once.
    summary = await deliver_task(  # type: ignore[call-overload]
        settings=quote(settings),  # unwrapped by Prefect before the call
        store=quote(store),
        language=language,
        format_name=settings.delivery.format,
    )
    logger = get_run_logger()
    logger.info(
        "delivered %d document(s), %d failed",
        summary["documents_delivered"],
        summary["documents_failed"],
    )
    if (
        summary["credentials_rejected"]
        or summary["stopped_by_configuration"]
        or summary["receiver_silent"]
    ):
        logger.warning("delivery stopped early (exit code %d)", summary["exit_code"])
    return DeliveryCounts(
        planned=int(summary["documents_planned"]),
        delivered=int(summary["documents_delivered"]),
        failed=int(summary["documents_failed"]),
        superseded=int(summary["documents_superseded"]),
        released=int(summary["documents_released"]),
        exit_code=int(summary["exit_code"]),
        in_doubt=int(summary["documents_in_doubt"]),
    )
