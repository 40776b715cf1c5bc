"""Plain records of reviewed notes' word accuracy (no text: figures and group names only)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class NoteAccuracy:
    """One reviewed note's figures: its latest decision (finalized or accepted as is).

    `revision` is the final revision's number, 0 when the machine's text was accepted.
    `author` and `department` are the manifest's columns of that name when the note was
    reviewed (the dictating clinician and the ward: not patient data), kept after a purge.
    """

    item_id: int
    revision: int
    reviewer: str
    reviewed_at: datetime
    language: str
    author: str | None
    department: str | None
    words: int
    substitutions: int
    deletions: int
    insertions: int
    accuracy: float

    @property
    def errors(self) -> int:
        """Words changed, missed or removed."""
        return self.substitutions + self.deletions + self.insertions


@dataclass(frozen=True)
class AccuracyFilter:
    """Which notes a reading takes: reviewed in [since, until), of `language`."""

    since: datetime | None = None
    until: datetime | None = None
    language: str | None = None


@dataclass(frozen=True)
class CorrectedNote:
    """A finalized note whose texts are still in the store (a purge removes them)."""

    item_id: int
    language: str
    author: str | None
    department: str | None
    reviewer: str
    reviewed_at: datetime
    metadata: dict[str, str]
    machine_text: str
    final_text: str


@dataclass(frozen=True)
class Standing:
    """An author's (or department's, or language's) reviewed notes: how many ever, and the
    words and errors of the newest `window` of them."""

    column: str  # author, department or language
    value: str
    reviewed: int
    window_words: int
    window_errors: int

    @property
    def accuracy(self) -> float:
        """Word accuracy over the window (1.0 with no words)."""
        if self.window_words == 0:
            return 1.0 if self.window_errors == 0 else 0.0
        return max(0.0, 1.0 - self.window_errors / self.window_words)


@dataclass(frozen=True)
class GroupSums:
    """The sums of one group's notes: enough for its accuracy and its interval.

    `errors_sq`, `errors_words` and `words_sq` are the sums of e², e·w and w² over the
    notes (e a note's errors, w its words), from which Σ(e − R·w)² follows for any R.
    """

    key: tuple[str | None, ...]
    notes: int
    words: int
    substitutions: int
    deletions: int
    insertions: int
    changed: int
    errors_sq: int
    errors_words: int
    words_sq: int
