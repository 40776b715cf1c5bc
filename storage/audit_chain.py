"""The audit trail's hash chain: what one event's hash covers, and how a chain is checked.

An event's hash is SHA-256 over a canonical JSON of its sequence number, time (UTC,
microseconds), actor, action, item, path, target, detail (keys sorted) and the previous
event's hash; the first event's previous hash is GENESIS. Changing any field of any
event, removing one, or putting one in out of order breaks the link at that event or
the one after it. Pure functions: no database here.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from storage.audit_records import AuditEvent

GENESIS = "0" * 64
# One encoder for every hash: json.dumps with these options would build a new one per call.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def event_hash(
    *,
    seq: int,
    occurred_at: datetime,
    actor: str,
    action: str,
    item_id: int | None,
    path: str | None,
    target: str | None,
    detail: Mapping[str, str | int] | None,
    prev_hash: str,
) -> str:
    """The SHA-256 (hex) of the event's canonical form chained to `prev_hash`."""
    canonical = _CANONICAL.encode(
        {
            "seq": seq,
            "time": occurred_at.astimezone(UTC).isoformat(timespec="microseconds"),
            "actor": actor,
            "action": action,
            "item_id": item_id,
            "path": path,
            "target": target,
            "detail": dict(detail) if detail else None,
            "prev": prev_hash,
        }
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def recompute_hash(event: AuditEvent) -> str:
    """The hash `event` should carry, from its stored fields and stored previous hash."""
    return event_hash(
        seq=event.seq,
        occurred_at=event.occurred_at,
        actor=event.actor,
        action=event.action,
        item_id=event.item_id,
        path=event.path,
        target=event.target,
        detail=event.detail,
        prev_hash=event.prev_hash,
    )


@dataclass(frozen=True)
class ChainBreak:
    """The first event that does not match, and why (a sentence for a person)."""

    seq: int
    reason: str


@dataclass(frozen=True)
class ChainReport:
    """What a walk of the chain found: how many events, the newest hash, the first break."""

    events: int
    newest_hash: str
    broken: ChainBreak | None
    anchor_seen: bool


def walk_chain(events: Iterable[AuditEvent], *, anchor: str | None = None) -> ChainReport:
    """Check every link in order of `seq`; stop at the first event that does not match."""
    previous_hash, previous_seq, count, anchor_seen = GENESIS, 0, 0, False
    for event in events:
        reason = _mismatch(event, previous_hash=previous_hash, previous_seq=previous_seq)
        if reason is not None:
            return ChainReport(count, previous_hash, ChainBreak(event.seq, reason), anchor_seen)
        previous_hash, previous_seq, count = event.hash, event.seq, count + 1
        anchor_seen = anchor_seen or event.hash == anchor
    return ChainReport(count, previous_hash, None, anchor_seen)


def _mismatch(event: AuditEvent, *, previous_hash: str, previous_seq: int) -> str | None:
    if event.seq != previous_seq + 1:
        return f"its sequence number follows {previous_seq} (an event before it is missing)"
    if event.prev_hash != previous_hash:
        return "it does not name the hash of the event before it (removed or inserted)"
    if recompute_hash(event) != event.hash:
        return "its content does not match its hash (edited after it was written)"
    return None
