"""The audit trail as the faces see it (`uow.audit`): append one event, read, walk the chain.

Appends are serialized by the store and commit with the unit of work they are made in;
nothing here updates or deletes an event.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from storage.audit_records import AuditEvent, AuditFilter, NewAuditEvent

__all__ = ["AuditRepository"]


class AuditRepository(Protocol):
    """The append-only trail of who did what to which recording, chained by hash."""

    def append(self, event: NewAuditEvent) -> AuditEvent:
        """Append `event` as the newest of the chain, timed by the database's clock."""
        ...

    def newest_event(self, *, action: str | None = None) -> AuditEvent | None:
        """The newest event of the chain (of `action`), if any."""
        ...

    def find_by_hash(self, event_hash_hex: str) -> AuditEvent | None:
        """The event that carries this hash, if any."""
        ...

    def chain(self, *, after_seq: int | None = None) -> Iterator[AuditEvent]:
        """Every event (after `after_seq`) in chain order, streamed."""
        ...

    def events(self, selection: AuditFilter) -> Iterator[AuditEvent]:
        """The events that pass `selection`, oldest first, streamed."""
        ...
