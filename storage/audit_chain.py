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
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from storage.audit_records import AuditEvent, NewAuditEvent

GENESIS = "0" * 64
# One encoder for every hash: json.dumps with these options would build a new one per call.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def seal_event(
    event: NewAuditEvent, *, seq: int, occurred_at: datetime, prev_hash: str
) -> AuditEvent:
    """`event` as the chain stores it: its number, time, the previous hash and its own."""
    unsealed = AuditEvent(
        **(vars(event) | {"detail": dict(event.detail) if event.detail else None}),
        seq=seq,
        occurred_at=occurred_at,
        prev_hash=prev_hash,
        hash="",
    )
    return replace(unsealed, hash=recompute_hash(unsealed))


def recompute_hash(event: AuditEvent) -> str:
    """The hash `event` should carry, from its stored fields and stored previous hash."""
    canonical = _CANONICAL.encode(canonical_form(event))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def canonical_form(event: AuditEvent) -> dict[str, object]:
    """What an event's hash covers, by the names it is hashed under. Every trail already
    kept was hashed in this form: changing a name, a field or the time's spelling breaks
    them all (tests/audit/test_recorded_trail.py)."""
    return {
        "seq": event.seq,
        "time": event.occurred_at.astimezone(UTC).isoformat(timespec="microseconds"),
        "actor": event.actor,
        "action": event.action,
        "item_id": event.item_id,
        "path": event.path,
        "target": event.target,
        "detail": dict(event.detail) if event.detail else None,
        "prev": event.prev_hash,
    }


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
    newest_at: datetime | None = None  # the time of the newest event that matched


def walk_chain(events: Iterable[AuditEvent], *, anchor: str | None = None) -> ChainReport:
    """Check every link in order of `seq`; stop at the first event that does not match."""
    previous_hash, previous_seq, count, anchor_seen = GENESIS, 0, 0, False
    newest_at: datetime | None = None
    for event in events:
        reason = _mismatch(event, previous_hash=previous_hash, previous_seq=previous_seq)
        if reason is not None:
            broken = ChainBreak(event.seq, reason)
            return ChainReport(count, previous_hash, broken, anchor_seen, newest_at)
        previous_hash, previous_seq, count = event.hash, event.seq, count + 1
        newest_at = event.occurred_at
        anchor_seen = anchor_seen or event.hash == anchor
    return ChainReport(count, previous_hash, None, anchor_seen, newest_at)


def _mismatch(event: AuditEvent, *, previous_hash: str, previous_seq: int) -> str | None:
    if event.unreadable is not None:
        return f"it cannot be read ({event.unreadable})"
    if event.seq != previous_seq + 1:
        return f"its sequence number follows {previous_seq} (an event before it is missing)"
    if event.prev_hash != previous_hash:
        return "it does not name the hash of the event before it (removed or inserted)"
    if recompute_hash(event) != event.hash:
        return "its content does not match its hash (edited after it was written)"
    return None
