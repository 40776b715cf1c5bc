"""Which new transcripts wait for a person, and why (MEDASR_REVIEW__REQUIRED and its bounds).

- Whatever the quality gate flags waits: `flag: empty_text, repetition`.
- `all`: every transcript waits: `all`.
- `measured`: a transcript waits when its author's measured word accuracy over their
  newest `window_notes` reviewed notes is below `min_accuracy` (`author below 0.97`), or
  fewer than `min_notes` of theirs were ever reviewed (`new author`); a note without an
  author is judged by its department, then by its language (`department below 0.97`,
  `new language`, ...).
- In every mode, `sample_rate` holds a share of the rest (`sample`), chosen from the
  recording's identity (its source, language and source version): the same recording is
  sampled or not on every night, whatever else the run holds.

The standings are read once per run (`uow.accuracy.standings`); a night's own reviews
count from the next run on.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from storage.accuracy_records import Standing

SAMPLE = "sample"
ALL = "all"
# The keys a run counts its holds under (summary, run row, artifact).
REASON_KEYS = ("flag", "below", "new", "sample", "all")
_SAMPLE_SPACE = 2**64


@dataclass(frozen=True)
class ReviewRouting:
    """The run's rule for holding transcripts, with the standings it judges by."""

    mode: str = "flagged"
    min_accuracy: float = 0.97
    min_notes: int = 20
    sample_rate: float = 0.0
    standings: Mapping[tuple[str, str], Standing] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        *,
        mode: str,
        min_accuracy: float,
        min_notes: int,
        sample_rate: float,
        standings: Iterable[Standing] = (),
    ) -> ReviewRouting:
        """A routing over these standings (by column and value)."""
        by_key = {(standing.column, standing.value): standing for standing in standings}
        return cls(mode, min_accuracy, min_notes, sample_rate, by_key)

    def reason_for(
        self,
        *,
        flags: Sequence[str],
        metadata: Mapping[str, str],
        language: str,
        identity: str,
    ) -> str | None:
        """Why this transcript waits for a person, or None when it is filed at once."""
        if flags:
            return "flag: " + ", ".join(flags)
        if self.mode == ALL:
            return ALL
        if self.mode == "measured":
            measured = self._measured_reason(metadata, language=language)
            if measured is not None:
                return measured
        if self.sample_rate > 0 and sampled(identity, rate=self.sample_rate):
            return SAMPLE
        return None

    def _measured_reason(self, metadata: Mapping[str, str], *, language: str) -> str | None:
        column, value = "language", language
        for name in ("author", "department"):
            if metadata.get(name):
                column, value = name, metadata[name]
                break
        standing = self.standings.get((column, value))
        if (0 if standing is None else standing.reviewed) < self.min_notes:
            return f"new {column}"
        if standing is not None and standing.accuracy < self.min_accuracy:
            return f"{column} below {self.min_accuracy:g}"
        return None


def sampled(identity: str, *, rate: float) -> bool:
    """Whether a recording falls in the sample: the same answer for the same identity."""
    digest = hashlib.sha256(identity.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") < rate * _SAMPLE_SPACE


def recording_identity(*, source_uri: str, language: str, source_version: str) -> str:
    """What names a recording for the sample: where it is, its language, its version."""
    return f"{source_uri}\n{language}\n{source_version}"


def reason_key(reason: str) -> str:
    """The count a hold reason falls under (one of REASON_KEYS)."""
    if reason.startswith("flag:"):
        return "flag"
    if " below " in reason:
        return "below"
    if reason.startswith("new "):
        return "new"
    return reason if reason in REASON_KEYS else "all"
