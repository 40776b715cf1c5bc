"""Process-wide defaults for the libraries medasr drives, set before they read them."""

from __future__ import annotations

import os

# Defaults only: an operator's own PREFECT_* values always win.
_PREFECT_DEFAULTS = {
    # Hospitals do not want usage telemetry leaving the building.
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    # The ephemeral API server logs a traceback for events still queued when it stops
    # at the end of a run; those events are Prefect's own bookkeeping, not our results.
    "PREFECT_SERVER_LOGGING_LEVEL": "CRITICAL",
}


def prepare_prefect_environment() -> None:
    """Fill in Prefect defaults that suit a batch job; call before Prefect is imported."""
    for name, value in _PREFECT_DEFAULTS.items():
        os.environ.setdefault(name, value)
