"""`medasr split` (placeholder until the audio work lands)."""

from __future__ import annotations


def split_command() -> None:
    """Split one recording into chunks."""
    raise SystemExit("medasr split: not built yet")
