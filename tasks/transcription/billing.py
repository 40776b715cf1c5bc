"""What audio costs: billed minutes and price, for the dry run and `medasr status --by`.

medasr assumes what most speech vendors bill: every request that reaches the service is
billed for the whole audio it carries, retries included, and a request shorter than the
vendor's least billed length (`MEDASR_SERVICE__BILLED_MIN_S_PER_REQUEST`) is billed as
that length. Silent chunks are never sent and cost nothing. The dry run knows no retries
yet: its estimate bills each planned request once. No names, no text: figures only.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime

from storage.records import ItemStatus, SentRecording

MS_PER_MIN = 60_000
MS_PER_HOUR = 3_600_000
# Groups that need no manifest column: the recording's language, the month it finished.
LANGUAGE_GROUP = "language"
MONTH_GROUP = "month"
# A recording with no value in the grouping column is counted under this name.
NO_VALUE = "(none)"
_DONE = frozenset({ItemStatus.DONE.value, ItemStatus.NEEDS_REVIEW.value})


def billed_ms(*, audio_ms: int, billed_min_ms: int) -> int:
    """One request's billed audio: its length, at least the vendor's minimum."""
    return max(audio_ms, billed_min_ms)


def cost_of(*, billed_ms: int, price_per_audio_min: float) -> float:
    """The price of `billed_ms` of billed audio, rounded to the cent (no currency)."""
    return round(billed_ms / MS_PER_MIN * price_per_audio_min, 2)


@dataclass
class SpendGroup:
    """One value of the grouping column and what its recordings cost."""

    value: str
    recordings_done: int = 0
    audio_ms: int = 0
    requests: int = 0
    billed_ms: int = 0

    def add(self, recording: SentRecording) -> None:
        if recording.status in _DONE:
            self.recordings_done += 1
            self.audio_ms += recording.duration_ms
        self.requests += recording.requests
        self.billed_ms += recording.billed_ms

    def row(self, *, column: str, price_per_audio_min: float) -> dict[str, str | int | float]:
        """The group as named figures, in the order a finance office reads them."""
        return {
            column: self.value,
            "recordings_done": self.recordings_done,
            "audio_hours": round(self.audio_ms / MS_PER_HOUR, 3),
            "requests": self.requests,
            "billed_minutes": round(self.billed_ms / MS_PER_MIN, 2),
            "estimated_cost": cost_of(
                billed_ms=self.billed_ms, price_per_audio_min=price_per_audio_min
            ),
        }


def group_value(recording: SentRecording, *, column: str) -> str:
    """The recording's value in `column`: a manifest column, its language or its month."""
    if column == LANGUAGE_GROUP:
        return recording.language
    if column == MONTH_GROUP:
        return _month(recording.finished_at)
    return recording.metadata.get(column) or NO_VALUE


def spend_by(recordings: Iterable[SentRecording], *, column: str) -> list[SpendGroup]:
    """What the recordings cost per value of `column`, values in order ("(none)" last)."""
    groups: dict[str, SpendGroup] = {}
    for recording in recordings:
        value = group_value(recording, column=column)
        group = groups.get(value)
        if group is None:
            group = groups[value] = SpendGroup(value)
        group.add(recording)
    return sorted(groups.values(), key=lambda g: (g.value == NO_VALUE, g.value))


def total_of(groups: Iterable[SpendGroup]) -> SpendGroup:
    """Every group added up, as one group named "total"."""
    total = SpendGroup("total")
    for group in groups:
        total.recordings_done += group.recordings_done
        total.audio_ms += group.audio_ms
        total.requests += group.requests
        total.billed_ms += group.billed_ms
    return total


def spend_rows(
    groups: Iterable[SpendGroup], *, column: str, price_per_audio_min: float
) -> Iterator[dict[str, str | int | float]]:
    """Each group's row, for a table, CSV or JSON lines."""
    for group in groups:
        yield group.row(column=column, price_per_audio_min=price_per_audio_min)


def _month(when: datetime) -> str:
    return f"{when.year:04d}-{when.month:02d}"
