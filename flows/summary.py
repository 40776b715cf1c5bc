"""The end-of-run summary: one plain dict for the CLI, the artifact, the run row, the exit code."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from prefect.artifacts import acreate_table_artifact

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
from flows.attention import TO_CHECK_KEY, TOTAL_KEY, recordings_to_check
from flows.drain import DrainResult
from service.errors import CredentialsRejected
from tasks.discovery.discover import Discovery

# Summary keys stored in the run row's count columns (storage RUN_COUNT_COLUMNS) ...
_RUN_COLUMNS = {
    "files_done": "done",
    "files_failed": "failed",
    "files_skipped": "skipped",
    "requests": "requests",
    "retries": "retries",
}
# ... and the other whole-number counts, kept aside in the run row.
_RUN_OTHER = {
    "files_released": "released",
    "chunks_sent": "chunks_sent",
    "chunks_reused": "chunks_reused",
    "files_listed": "listed",
    "files_not_listed": "not_listed",
    "files_unreadable": "unreadable",
    "requeued": "requeued",
    "files_needs_review": "needs_review",
}
# Counts that make a finished run exit 1.
# needs_review too: the gate held a transcript back, a person must accept or resend it.
_NOT_ALL_DONE = ("files_failed", "files_unreadable", "files_skipped", "files_needs_review")
_RUN_STATUS = {
    EXIT_OK: "done",
    EXIT_SOME_FAILED: "some_failed",  # or some_skipped, when none failed (run_status)
    EXIT_USAGE: "stopped",
    EXIT_CREDENTIALS: "stopped",
    EXIT_INTERRUPTED: "interrupted",
}


class RunStopped(CredentialsRejected):
    """Credentials were rejected: the run stopped at once; carries the run's summary."""

    def __init__(
        self, message: str, *, status: int | None = None, summary: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message, status=status)
        self.summary = summary or {}


def stopped_with(summary: dict[str, Any], error: CredentialsRejected) -> RunStopped:
    """The error a stopped flow raises: the credentials message plus the summary so far."""
    return RunStopped(error.message, status=getattr(error, "status", None), summary=summary)


def summarize(
    result: DrainResult,
    *,
    discovery: Discovery | None = None,
    requeued: int | None = None,
    source_roots: Sequence[str] = (),
) -> dict[str, Any]:
    """Counts, and the recordings to check by path and reason: no transcript text, no secret.

    Paths are relative to the deepest of `source_roots` holding them (else whole URIs).
    """
    files = result.stats.files
    summary: dict[str, Any] = {
        "files_done": files.get("done", 0),
        "files_needs_review": files.get("needs_review", 0),
        "files_skipped": files.get("skipped", 0),
        "files_failed": files.get("failed", 0),
        "files_released": files.get("released", 0) + files.get("lost", 0),
        "audio_hours_done": round(result.stats.audio_ms_done / 3_600_000, 4),
        "requests": result.stats.requests,
        "retries": result.stats.retries,
        "chunks_sent": result.stats.chunks_sent,
        "chunks_reused": result.stats.chunks_reused,
        "wall_s": round(result.wall_s, 2),
        "credentials_rejected": isinstance(result.stopped, CredentialsRejected),
        "stopped_by_configuration": isinstance(result.stopped, ConfigError),
        "interrupted": isinstance(result.stopped, RunInterrupted),
    }
    if discovery is not None:
        summary["files_listed"] = discovery.listed
        summary["files_not_listed"] = discovery.not_listed
        summary["files_unreadable"] = discovery.unreadable
    if requeued is not None:
        summary["requeued"] = requeued
    to_check, total = recordings_to_check(result.outcomes, discovery=discovery, roots=source_roots)
    summary[TOTAL_KEY] = total
    summary[TO_CHECK_KEY] = to_check
    summary["exit_code"] = exit_code_for(summary)
    return summary


def exit_code_for(summary: dict[str, Any]) -> int:
    """3 credentials rejected, 2 a setting stopped the run, 130 interrupted, 1 any file
    failed, was skipped (a silent recording may be a lost note) or needs review: a
    person must look."""
    return exit_code_of(
        credentials_rejected=bool(summary.get("credentials_rejected")),
        stopped_by_configuration=bool(summary.get("stopped_by_configuration")),
        interrupted=bool(summary.get("interrupted")),
        needs_a_person=any(summary.get(key, 0) > 0 for key in _NOT_ALL_DONE),
    )


def run_counts(summary: dict[str, Any]) -> dict[str, int]:
    """The summary's whole-number counts under the run row's names."""
    counts = {column: int(summary.get(key, 0)) for key, column in _RUN_COLUMNS.items()}
    counts["files"] = counts["done"] + counts["failed"] + counts["skipped"]
    counts["files"] += int(summary.get("files_released", 0))
    counts["files"] += int(summary.get("files_needs_review", 0))
    counts |= {name: int(summary[key]) for key, name in _RUN_OTHER.items() if key in summary}
    return counts


def run_status(summary: dict[str, Any]) -> str:
    """done, some_failed, some_skipped or some_to_review (none failed), stopped, interrupted."""
    status = _RUN_STATUS[exit_code_for(summary)]
    failed = summary.get("files_failed", 0) + summary.get("files_unreadable", 0)
    if status == "some_failed" and not failed:
        return "some_skipped" if summary.get("files_skipped", 0) else "some_to_review"
    return status


async def publish_summary(summary: dict[str, Any], *, title: str) -> None:
    """Attach the summary to the flow run as a table artifact, a row per recording to check."""
    rows = [
        {"metric": key, "value": value} for key, value in summary.items() if key != TO_CHECK_KEY
    ]
    rows += [
        {"metric": f"{row['status']}: {row['recording']}", "value": row["reason"]}
        for row in summary.get(TO_CHECK_KEY, [])
    ]
    await acreate_table_artifact(table=rows, key="medasr-summary", description=title)
