"""A delivery run's counts and its summary (the console, the artifact, the exit code)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from config.errors import ConfigError, MedasrError, exit_code_of
from service.errors import CredentialsRejected, ServiceError
from tasks.delivery.errors import ReceiverSilent


def in_doubt_rows(uow: Any) -> int:
    """Deliveries in doubt in the store (every target): each waits for a person."""
    return sum(c.rows for c in uow.deliveries.delivery_counts() if c.status == "in_doubt")


@dataclass
class DeliveryStats:
    """Counts of one delivery run (no text, no secret)."""

    planned: int = 0
    requeued: int = 0
    delivered: int = 0
    failed: int = 0
    superseded: int = 0
    released: int = 0
    in_doubt: int = 0  # rows in doubt after this run (new and older ones)
    resent_in_doubt: int = 0
    requests: int = 0
    retries: int = 0
    bytes_sent: int = 0
    stopped: MedasrError | None = field(default=None, repr=False)


# Failures found before anything went out: they cost no request.
_UNSENT_KINDS = frozenset(
    {"metadata_missing", "metadata_invalid", "document_invalid", "mllp_unreachable"}
)


def requests_of(exc: MedasrError) -> int:
    """The request a failed send made (its retries are counted as they happen)."""
    refused_unsent = isinstance(exc, ServiceError) and exc.status is None
    if exc.kind in _UNSENT_KINDS or (refused_unsent and exc.kind == "payload_too_large"):
        return 0
    return 1


def delivery_summary(stats: DeliveryStats, *, dry_run: bool = False) -> dict[str, Any]:
    """Counts for the console, the artifact and the exit code."""
    summary: dict[str, Any] = {
        "documents_planned": stats.planned,
        "documents_requeued": stats.requeued,
        "documents_delivered": stats.delivered,
        "documents_failed": stats.failed,
        "documents_in_doubt": stats.in_doubt,
        "documents_superseded": stats.superseded,
        "documents_released": stats.released,
        "requests": stats.requests,
        "retries": stats.retries,
        "bytes_sent": stats.bytes_sent,
        "credentials_rejected": isinstance(stats.stopped, CredentialsRejected),
        "stopped_by_configuration": isinstance(stats.stopped, ConfigError),
        "receiver_silent": isinstance(stats.stopped, ReceiverSilent),
    }
    if dry_run:
        summary["sent"] = 0
    summary["exit_code"] = exit_code_of(
        credentials_rejected=summary["credentials_rejected"],
        stopped_by_configuration=summary["stopped_by_configuration"],
        needs_a_person=stats.failed + stats.in_doubt > 0,
    )
    return summary
