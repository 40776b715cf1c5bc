"""The review workstation's audit events, written through one function.

`record_event` has the signature of the audit trail's writer (`audit.record_event`):
the trail takes these events over by replacing this module's body. Until then an event
is one log line. An event names who, what and which recording, never transcript text,
a password or a session id.
"""

from __future__ import annotations

import logging
from enum import StrEnum
from typing import Any

logger = logging.getLogger("medasr.audit")


class AuditAction(StrEnum):
    """The review workstation's actions (names are a contract)."""

    TRANSCRIPT_VIEWED = "transcript_viewed"
    AUDIO_SERVED = "audio_served"
    REVISION_SAVED = "revision_saved"
    FINALIZED = "finalized"
    ACCEPTED = "accepted"
    SENT_BACK = "sent_back"
    LOGIN = "login"
    LOGIN_FAILED = "login_failed"
    LOCKED_OUT = "locked_out"
    LOGOUT = "logout"
    REVIEWER_ADDED = "reviewer_added"


def command_actor() -> str:
    """The actor of a command typed at this host's terminal."""
    return "cli"


def record_event(
    uow: Any,
    *,
    action: str,
    actor: str,
    item_id: int | None = None,
    path: str | None = None,
    target: str | None = None,
    detail: dict[str, Any] | None = None,
) -> None:
    """Record one event of the audit trail inside the caller's unit of work."""
    del uow  # the trail's table is written in it once the trail lands
    logger.info(
        "audit %s actor=%s item=%s path=%s target=%s detail=%s",
        action,
        actor,
        item_id,
        path,
        target,
        detail or {},
    )
