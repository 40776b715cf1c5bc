"""The one way every face writes the audit trail: `record_event(uow, action=..., actor=...)`.

The event is appended inside the caller's open unit of work, so it commits with the
change it describes (and vanishes with it on a rollback); its time is the database's
clock. An event says who, what, which recording and where to; its `detail` holds
counts, formats and receiver ids, never text: values are ints or short strings, and
keys that name text, tokens or secrets are refused outright.
"""

from __future__ import annotations

import os
import pwd
import socket
from collections.abc import Mapping

from audit.actions import AuditAction
from audit.errors import AuditEventRefused
from storage.audit_records import NewAuditEvent
from storage.interface import UnitOfWork

MAX_DETAIL_STRING = 256
MAX_FIELD = 2048
# Keys that would invite transcript text or a secret into the trail.
_FORBIDDEN_KEYS = frozenset(
    {"text", "transcript", "body", "content", "token", "password", "secret", "key", "note"}
)


def record_event(
    uow: UnitOfWork,
    *,
    action: AuditAction,
    actor: str,
    item_id: int | None = None,
    path: str | None = None,
    target: str | None = None,
    detail: Mapping[str, str | int] | None = None,
) -> None:
    """Append one event to the trail in `uow` (a write unit of work); raises AuditEventRefused."""
    action = AuditAction(action)
    if not actor or len(actor) > 255:
        raise AuditEventRefused("an audit event needs an actor of 1 to 255 characters")
    for name, value in (("path", path), ("target", target)):
        if value is not None and len(value) > MAX_FIELD:
            raise AuditEventRefused(f"an audit event's {name} is longer than {MAX_FIELD}")
    uow.audit.append(
        NewAuditEvent(
            actor=actor,
            action=action.value,
            item_id=item_id,
            path=path,
            target=target,
            detail=_checked_detail(detail),
        )
    )


def _checked_detail(detail: Mapping[str, str | int] | None) -> dict[str, str | int] | None:
    if not detail:
        return None
    checked: dict[str, str | int] = {}
    for key, value in detail.items():
        if key.lower() in _FORBIDDEN_KEYS:
            raise AuditEventRefused(f"an audit event's detail may not carry {key!r}")
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise AuditEventRefused(f"an audit event's detail {key!r} must be a number or a name")
        if isinstance(value, str) and len(value) > MAX_DETAIL_STRING:
            raise AuditEventRefused(
                f"an audit event's detail {key!r} is longer than {MAX_DETAIL_STRING}"
            )
        checked[str(key)] = value
    return checked


def command_actor() -> str:
    """Who runs this command: "os:USER@HOST" from the password database and the host name."""
    uid = os.getuid()
    try:
        user = pwd.getpwuid(uid).pw_name
    except KeyError:  # a uid without a passwd entry (some containers)
        user = f"uid{uid}"
    return f"os:{user}@{socket.gethostname()}"
