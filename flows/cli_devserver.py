"""`medasr devserver` (placeholder until the devserver work lands)."""

from __future__ import annotations


def devserver_command() -> None:
    """Run the local stand-in of the transcription service."""
    raise SystemExit("medasr devserver: not built yet")
