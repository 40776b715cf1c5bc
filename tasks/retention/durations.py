"""A retention period as people write it: 90d, 12w, 1y (a year is 365 days)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from tasks.errors import RetentionInvalid

_DAYS_PER_UNIT = {"d": 1, "w": 7, "y": 365}
_PERIOD = re.compile(r"^\s*(\d{1,5})\s*([dwy])\s*$", re.IGNORECASE)
MAX_DAYS = 36_500


@dataclass(frozen=True)
class Retention:
    """A period as written (`text`) and its length in days."""

    text: str
    days: int

    def cutoff(self, now: datetime) -> datetime:
        """The moment before which a recording's finish is older than the period."""
        return now - timedelta(days=self.days)


def parse_retention(text: str, *, option: str = "--older-than") -> Retention:
    """`90d`, `12w` or `1y` as a Retention; raises RetentionInvalid."""
    found = _PERIOD.match(text)
    if found is None:
        raise RetentionInvalid(
            f"{option} takes a period like 90d, 12w or 1y (days, weeks, years); "
            f"got {_shown(text)!r}"
        )
    days = int(found.group(1)) * _DAYS_PER_UNIT[found.group(2).lower()]
    if not 1 <= days <= MAX_DAYS:
        raise RetentionInvalid(
            f"{option} must be between 1 day and 100 years; got {_shown(text)!r}"
        )
    return Retention(text=f"{found.group(1)}{found.group(2).lower()}", days=days)


def _shown(text: str, *, max_chars: int = 40) -> str:
    """`text` as typed, or its first `max_chars` marked as cut (never a unit dropped)."""
    return text if len(text) <= max_chars else text[:max_chars] + "…"
