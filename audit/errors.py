"""Errors of the audit wing::

TerminalError (config/errors.py)
├── AuditEventRefused   an event that would carry what the trail must not hold
└── RunStop └── ConfigError
    └── AuditFilterInvalid   `medasr audit` given a date, action or hash it cannot use
"""

from __future__ import annotations

from config.errors import ConfigError, TerminalError


class AuditEventRefused(TerminalError):
    """The event was not written: a detail that could hold text, or a field too long."""

    kind = "audit_event_refused"


class AuditFilterInvalid(ConfigError):
    """A filter of `medasr audit` cannot be used (a date, an action, a hash)."""

    kind = "audit_filter_invalid"
