"""The nightly deployment's delivery step: after the backlog, when MEDASR_DELIVER=true."""

from __future__ import annotations

from typing import Any

from prefect import get_run_logger
from prefect.utilities.annotations import quote

from config.settings import Settings
from storage.interface import UnitOfWorkFactory
from tasks.delivery.deliver import deliver_task

# The delivery counts the backlog summary carries (no text, no secret).
_CARRIED = (
    "documents_planned",
    "documents_delivered",
    "documents_failed",
    "documents_superseded",
    "documents_released",
)


async def deliver_after_backlog(
    settings: Settings, store: UnitOfWorkFactory, *, language: str
) -> dict[str, Any]:
    """Deliver the language's done transcripts; returns counts for the run summary.

    A delivery stopped by credentials or a setting is reported in the counts and the
    log; the transcripts stay recorded and the next run delivers them.
    """
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
    if summary["credentials_rejected"] or summary["stopped_by_configuration"]:
        logger.warning("delivery stopped early (exit code %d)", summary["exit_code"])
    carried = {key: summary[key] for key in _CARRIED}
    carried["delivery_exit_code"] = summary["exit_code"]
    return carried
