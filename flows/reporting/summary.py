"""The end-of-run summary: one typed value for the CLI, the artifact, the run row, the exit code.

A flow returns its `RunSummary`, stopped or not: a run stopped by rejected credentials
or a setting says so in `stopped` (and `exit_code`), nothing is raised to carry it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING

from config.errors import (
    EXIT_CREDENTIALS,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_SOME_FAILED,
    EXIT_USAGE,
    ConfigError,
    RunInterrupted,
    exit_code_of,
)
from flows.reporting.attention import CheckRow, recordings_to_check
from service.errors import CredentialsRejected
from storage.accuracy_records import NoteAccuracy
from storage.records import ItemStatus, QueueSize
from tasks.discovery.discover import Discovery
from tasks.transcription.audio_budget import MS_PER_HOUR, LeftForNextRun
from tasks.transcription.review_routing import REASON_KEYS

if TYPE_CHECKING:  # the batch loops import the claim machinery; a summary needs only the type
    from flows.batch_loops import DrainResult

# What the run row's status column says for each exit code (some_failed may be refined).
_RUN_STATUS = {
    EXIT_OK: "done",
    EXIT_SOME_FAILED: "some_failed",  # or some_skipped / some_to_review (RunSummary.run_status)
    EXIT_USAGE: "stopped",
    EXIT_CREDENTIALS: "stopped",
    EXIT_INTERRUPTED: "interrupted",
}


class StopReason(StrEnum):
    """Why a run ended before its work was through; the value is the table row's name."""

    CREDENTIALS = "credentials_rejected"
    CONFIGURATION = "stopped_by_configuration"
    INTERRUPTED = "interrupted"


@dataclass(frozen=True)
class DeliveryCounts:
    """What the nightly delivery step did (MEDASR_DELIVER=true); no text, no secret."""

    planned: int
    delivered: int
    failed: int
    superseded: int
    released: int
    exit_code: int
    in_doubt: int = 0  # sent, no answer recorded: a person checks, then --resend-in-doubt


@dataclass(frozen=True)
class RunSummary:
    """Counts, why the run stopped (if it did), and the recordings a person should check."""

    files_done: int = 0
    files_needs_review: int = 0
    files_skipped: int = 0
    files_failed: int = 0
    files_released: int = 0
    audio_hours_done: float = 0.0
    requests: int = 0
    retries: int = 0
    chunks_sent: int = 0
    chunks_reused: int = 0
    wall_s: float = 0.0
    stopped: StopReason | None = None
    stop_message: str | None = None  # the stopping error's one sentence (never a secret)
    files_listed: int | None = None  # None: the run listed no source (a rerun)
    files_not_listed: int | None = None
    files_unreadable: int | None = None
    not_audio_ignored: int | None = None  # None: the run listed no source
    requeued: int | None = None  # None: the run re-queued nothing (a backlog)
    files_purged: int | None = None  # purged files touched but unchanged: left purged
    to_check: tuple[CheckRow, ...] = ()
    to_check_total: int = 0
    delivery: DeliveryCounts | None = None
    # MEDASR_REVIEW__REQUIRED=all: the queue a person works through (not a failure).
    review_waiting: int | None = None
    review_oldest_h: float | None = None  # how long its oldest recording has waited, hours
    # Holds for review by reason (flag, below, new, sample, all): shown once any hold was
    # routine (MEDASR_REVIEW__REQUIRED=all or measured, or a sample), so a flag-only
    # night reads as it always has.
    review_held: tuple[tuple[str, int], ...] = ()
    # Notes a person reviewed in the 24 hours before the summary, their final words and
    # word accuracy (None: none reviewed).
    reviewed_notes: int | None = None
    reviewed_words: int | None = None
    reviewed_accuracy: float | None = None
    # The audio cap stopped the claims: recordings (and their hours) left pending.
    budget_left: int | None = None
    budget_left_hours: float | None = None
    # (language, done, to check) per language, when the run saw more than one.
    by_language: tuple[tuple[str, int, int], ...] = ()

    @property
    def budget_message(self) -> str | None:
        """The sentence "budget reached: N recordings (H hours) left for the next run", or None."""
        if self.budget_left is None or self.budget_left_hours is None:
            return None
        left = LeftForNextRun(self.budget_left, round(self.budget_left_hours * MS_PER_HOUR))
        return left.sentence()

    @property
    def exit_code(self) -> int:
        """3 credentials rejected, 2 a setting stopped the run, 130 interrupted, 1 any file
        failed, was skipped (a silent recording may be a lost note) or needs review."""
        not_all_done = (
            self.files_failed,
            self.files_unreadable or 0,
            self.files_skipped,
            self.files_needs_review,
        )
        return exit_code_of(  # the one reading of EXIT_CODES, shared with `deliver`
            credentials_rejected=self.stopped is StopReason.CREDENTIALS,
            stopped_by_configuration=self.stopped is StopReason.CONFIGURATION,
            interrupted=self.stopped is StopReason.INTERRUPTED,
            needs_a_person=any(n > 0 for n in not_all_done),
        )

    @property
    def failed_total(self) -> int:
        """Files that failed in this run, listed-but-unreadable ones included."""
        return self.files_failed + (self.files_unreadable or 0)

    def rows(self) -> list[tuple[str, int | float | bool]]:
        """(name, value) in the order the CLI table and the run record have always shown."""
        rows: list[tuple[str, int | float | bool]] = [
            ("files_done", self.files_done),
            ("files_needs_review", self.files_needs_review),
            ("files_skipped", self.files_skipped),
            ("files_failed", self.files_failed),
            ("files_released", self.files_released),
            ("audio_hours_done", self.audio_hours_done),
            ("requests", self.requests),
            ("retries", self.retries),
            ("chunks_sent", self.chunks_sent),
            ("chunks_reused", self.chunks_reused),
            ("wall_s", self.wall_s),
        ]
        rows += [(reason.value, self.stopped is reason) for reason in StopReason]
        rows += [(name, value) for name, value in self._optional_counts() if value is not None]
        rows += [(f"review_held_{key}", count) for key, count in self.review_held]
        if self.reviewed_accuracy is not None:
            rows.append(("reviewed_accuracy", self.reviewed_accuracy))
        if self.review_oldest_h is not None:
            rows.append(("review_oldest_waiting_h", self.review_oldest_h))
        if self.budget_left_hours is not None:
            rows.append(("budget_left_hours", self.budget_left_hours))
        for language, done, to_check in self.by_language:
            rows += [(f"done_{language}", done), (f"to_check_{language}", to_check)]
        rows += [("recordings_to_check_total", self.to_check_total), ("exit_code", self.exit_code)]
        if self.delivery is not None:
            d = self.delivery
            rows += [
                ("documents_planned", d.planned),
                ("documents_delivered", d.delivered),
                ("documents_failed", d.failed),
                ("documents_in_doubt", d.in_doubt),
                ("documents_superseded", d.superseded),
                ("documents_released", d.released),
                ("delivery_exit_code", d.exit_code),
            ]
        return rows

    def _optional_counts(self) -> list[tuple[str, int | None]]:
        return [
            ("files_listed", self.files_listed),
            ("files_not_listed", self.files_not_listed),
            ("files_unreadable", self.files_unreadable),
            ("not_audio_ignored", self.not_audio_ignored),
            ("requeued", self.requeued),
            ("files_purged", self.files_purged),
            ("review_waiting", self.review_waiting),
            ("reviewed_notes", self.reviewed_notes),
            ("reviewed_words", self.reviewed_words),
            ("budget_left", self.budget_left),
        ]

    def run_counts(self) -> dict[str, int]:
        """The whole-number counts under the run row's names (numbers only: no text)."""
        counts = {
            "done": self.files_done,
            "failed": self.files_failed,
            "skipped": self.files_skipped,
            "requests": self.requests,
            "retries": self.retries,
        }
        counts["files"] = (
            self.files_done
            + self.files_failed
            + self.files_skipped
            + self.files_released
            + self.files_needs_review
        )
        counts |= {"released": self.files_released, "chunks_sent": self.chunks_sent}
        counts |= {"chunks_reused": self.chunks_reused, "needs_review": self.files_needs_review}
        optional = dict(self._optional_counts())
        renamed = {"files_listed": "listed", "files_not_listed": "not_listed"}
        renamed |= {"files_unreadable": "unreadable", "requeued": "requeued"}
        renamed |= {"files_purged": "purged_unchanged"}
        renamed |= {"not_audio_ignored": "not_audio_ignored", "review_waiting": "review_waiting"}
        renamed |= {"reviewed_notes": "reviewed_notes", "reviewed_words": "reviewed_words"}
        renamed |= {"budget_left": "budget_left"}
        counts |= {renamed[k]: v for k, v in optional.items() if v is not None}
        counts |= {f"review_held_{key}": count for key, count in self.review_held}
        if self.budget_left_hours is not None:
            counts["budget_left_audio_s"] = round(self.budget_left_hours * 3600)
        return counts

    def run_status(self) -> str:
        """done (budget_reached: done, the audio cap left some for the next run),
        some_failed, some_skipped or some_to_review (none failed), stopped, interrupted."""
        status = _RUN_STATUS[self.exit_code]
        if status == "done" and self.budget_left is not None:
            return "budget_reached"  # done as told; the rest waits for the next run
        if status == "some_failed" and not self.failed_total:
            return "some_skipped" if self.files_skipped else "some_to_review"
        return status

    def with_review_queue(self, queue: QueueSize, *, now: datetime) -> RunSummary:
        """This summary with the review queue's size and the wait of its oldest recording."""
        oldest_h = None
        if queue.oldest is not None:
            oldest_h = round((now - queue.oldest).total_seconds() / 3600, 2)
        return replace(self, review_waiting=queue.waiting, review_oldest_h=oldest_h)

    def with_reviewed(self, notes: Sequence[NoteAccuracy]) -> RunSummary:
        """This summary with the word accuracy of these reviewed notes (unchanged if none)."""
        if not notes:
            return self
        words = sum(note.words for note in notes)
        errors = sum(note.errors for note in notes)
        accuracy = 1.0 if words == 0 else max(0.0, 1.0 - errors / words)
        return replace(
            self,
            reviewed_notes=len(notes),
            reviewed_words=words,
            reviewed_accuracy=round(accuracy, 4),
        )

    def with_budget_left(self, left: LeftForNextRun) -> RunSummary:
        """This summary with what the audio cap left for the next run."""
        return replace(self, budget_left=left.recordings, budget_left_hours=left.hours)

    def with_delivery(self, delivery: DeliveryCounts) -> RunSummary:
        """This summary with the delivery step's counts."""
        return replace(self, delivery=delivery)


def stop_reason(stopped: BaseException | None) -> StopReason | None:
    """What a drain's stopping error means for the run."""
    if isinstance(stopped, CredentialsRejected):
        return StopReason.CREDENTIALS
    if isinstance(stopped, ConfigError):
        return StopReason.CONFIGURATION
    if isinstance(stopped, RunInterrupted):
        return StopReason.INTERRUPTED
    return None


def summarize(
    result: DrainResult,
    *,
    discovery: Discovery | None = None,
    requeued: int | None = None,
    source_roots: Sequence[str] = (),
) -> RunSummary:
    """Counts, and the recordings to check by path and reason: no transcript text, no secret.

    Paths are relative to the deepest of `source_roots` holding them (else whole URIs).
    """
    files = result.stats.files
    to_check, total = recordings_to_check(result.outcomes, discovery=discovery, roots=source_roots)
    unreadable = None if discovery is None else discovery.unreadable
    return RunSummary(
        files_done=files.get(ItemStatus.DONE, 0),
        files_needs_review=files.get(ItemStatus.NEEDS_REVIEW, 0),
        files_skipped=files.get(ItemStatus.SKIPPED, 0),
        files_failed=files.get(ItemStatus.FAILED, 0),
        files_released=files.get("released", 0) + files.get("lost", 0),
        audio_hours_done=round(result.stats.audio_ms_done / 3_600_000, 4),
        requests=result.stats.requests,
        retries=result.stats.retries,
        chunks_sent=result.stats.chunks_sent,
        chunks_reused=result.stats.chunks_reused,
        wall_s=round(result.wall_s, 2),
        stopped=stop_reason(result.stopped),
        stop_message=None if result.stopped is None else str(result.stopped),
        files_listed=None if discovery is None else discovery.listed,
        files_not_listed=None if discovery is None else discovery.not_listed,
        files_unreadable=unreadable,
        not_audio_ignored=None if discovery is None else discovery.ignored.count,
        requeued=requeued,
        files_purged=files.get(ItemStatus.PURGED) or None,
        to_check=tuple(to_check),
        to_check_total=total,
        review_held=_held(result.stats.held),
        by_language=_by_language(result.stats.by_language),
    )


def _by_language(counts: dict[str, dict[str, int]]) -> tuple[tuple[str, int, int], ...]:
    """(language, done, to check) of each language, when there were several."""
    if len(counts) < 2:
        return ()
    to_check = (ItemStatus.FAILED, ItemStatus.SKIPPED, ItemStatus.NEEDS_REVIEW)
    return tuple(
        (language, by.get(ItemStatus.DONE, 0), sum(by.get(s, 0) for s in to_check))
        for language, by in sorted(counts.items())
    )


def _held(held: dict[str, int]) -> tuple[tuple[str, int], ...]:
    """Holds by reason, once any was routine (not only the gate's flags)."""
    if not any(count for key, count in held.items() if key != "flag"):
        return ()
    return tuple((key, held[key]) for key in REASON_KEYS if held.get(key))
