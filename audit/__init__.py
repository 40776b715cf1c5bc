"""The audit trail: who saw, changed, sent or removed which recording, and when.

Every face (the command line, the review workstation) writes through `record_event`
inside the unit of work of the change it describes; `command_actor()` names the OS user
and host of a command. The store keeps the events append-only and chained by hash
(storage/audit_log.py, storage/audit_chain.py). May import storage/ and config/ only.
"""

from __future__ import annotations

from audit.actions import AuditAction
from audit.writer import command_actor, record_event

__all__ = ["AuditAction", "command_actor", "record_event"]
