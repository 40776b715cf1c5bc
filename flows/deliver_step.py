"""The nightly deployment's delivery step: after the backlog, when MEDASR_DELIVER=true."""

from __future__ import annotations

from prefect import get_run_logger

from config.settings import Settings
from flows.summary import DeliveryCounts
from storage.database import Store
from tasks.delivery.deliver import DeliveryContext, deliver_task


async def deliver_after_backlog(
    settings: Settings, store: Store, *, language: str
) -> DeliveryCounts:
    """Deliver the language's done transcripts; returns counts for the run summary.

    A delivery stopped by credentials or a setting is reported in the counts and the
    log; the transcripts stay recorded and the next run delivers them.
    """
    # The delivery wing still answers with a plain dict; it is read here, once.
    summary = await deliver_task(
        ctx=DeliveryContext(settings=settings, store=store),
        language=language,
        format_name=settings.delivery.format,
    )
    logger = get_run_logger()
    logger.info(
        "delivered %d document(s), %d failed",
        summary["documents_delivered"],
        summary["documents_failed"],
    )
    if summary["credentials_rejected"] or summary["stopped_by_configuration"]:
        logger.warning("delivery stopped early (exit code %d)", summary["exit_code"])
    return DeliveryCounts(
        planned=int(summary["documents_planned"]),
        delivered=int(summary["documents_delivered"]),
        failed=int(summary["documents_failed"]),
        superseded=int(summary["documents_superseded"]),
        released=int(summary["documents_released"]),
        exit_code=int(summary["exit_code"]),
    )
