"""The purge as a Prefect flow: the `purge` deployment of `medasr serve --purge-cron`.

Parameters are the period and filters only (nothing secret); the store, the data dir and
the delivery setting come from MEDASR_* as for the other deployments. The flow purges
the store (tasks/retention/recording_purge.py), then deletes medasr's flow runs older than the
period from the Prefect server it runs on (flows/prefect_retention.py). It returns counts
and the receipts' digest, never a recording's name.
"""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger
from prefect.settings import PREFECT_API_URL

from audit import command_actor
from config.settings import load_settings
from flows.prefect_retention import FLOW_NAME, forget_flow_runs
from storage import open_store
from tasks.retention.durations import parse_retention
from tasks.retention.recording_purge import PurgeRequest, purge_recordings


@flow(name=FLOW_NAME, flow_run_name="purge-{retention}", log_prints=False)
async def purge_recordings_flow(
    retention: str = "90d", language: str | None = None, include_undelivered: bool = False
) -> dict[str, Any]:
    """Purge recordings finished longer ago than `retention` (90d, 12w, 1y)."""
    period = parse_retention(retention, option="retention")
    settings = load_settings()
    store = open_store(settings.storage)
    try:
        with store.unit_of_work(read_only=True) as uow:
            delivered_before = bool(uow.deliveries.delivery_counts())
        request = PurgeRequest(
            retention=period,
            actor=command_actor(),
            language=language,
            include_undelivered=include_undelivered,
            delivery_configured=settings.delivery.enabled or delivered_before,
        )
        result = purge_recordings(
            store, request, journal_folder=settings.storage.data_dir / "journal"
        )
    finally:
        store.dispose()
    api_url = PREFECT_API_URL.value()
    cleanup = await forget_flow_runs(before=result.cutoff, api_url=api_url) if api_url else None
    logger = get_run_logger()
    logger.info("purged %d recording(s) older than %s", result.total, period.text)
    if cleanup is not None:
        logger.info(cleanup.sentence())
    return {
        "purged": result.total,
        "kept": sum(k.items for k in result.kept),
        "receipts": result.receipts,
        "digest": result.digest,
        "prefect_flow_runs_deleted": cleanup.flow_runs if cleanup else 0,
    }
