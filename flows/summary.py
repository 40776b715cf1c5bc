"""The end-of-run summary: one plain dict for the CLI, the artifact and the exit code."""

from __future__ import annotations

from typing import Any

from prefect.artifacts import acreate_table_artifact

from flows.drain import DrainResult

EXIT_OK = 0
EXIT_SOME_FAILED = 1
EXIT_USAGE = 2
EXIT_CREDENTIALS = 3


def summarize(
    result: DrainResult, *, listed: int | None = None, unlisted: int = 0, unreadable: int = 0
) -> dict[str, Any]:
    """Counts only: no transcript text, no secret, safe for artifacts and logs."""
    files = result.stats.files
    summary: dict[str, Any] = {
        "files_done": files.get("done", 0),
        "files_skipped": files.get("skipped", 0),
        "files_failed": files.get("failed", 0),
        "files_released": files.get("released", 0) + files.get("lost", 0),
        "audio_hours_done": round(result.stats.audio_ms_done / 3_600_000, 4),
        "requests": result.stats.requests,
        "retries": result.stats.retries,
        "chunks_sent": result.stats.chunks_sent,
        "chunks_reused": result.stats.chunks_reused,
        "wall_s": round(result.wall_s, 2),
        "credentials_rejected": result.stopped is not None,
    }
    if listed is not None:
        summary["files_listed"] = listed
        summary["files_not_listed"] = unlisted
        summary["files_unreadable"] = unreadable
    summary["exit_code"] = exit_code_for(summary)
    return summary


def exit_code_for(summary: dict[str, Any]) -> int:
    """3 if credentials were rejected, 1 if any file failed or was unreadable, else 0."""
    if summary.get("credentials_rejected"):
        return EXIT_CREDENTIALS
    if summary.get("files_failed", 0) > 0 or summary.get("files_unreadable", 0) > 0:
        return EXIT_SOME_FAILED
    return EXIT_OK


async def publish_summary(summary: dict[str, Any], *, title: str) -> None:
    """Attach the summary to the flow run as a table artifact."""
    rows = [{"metric": key, "value": value} for key, value in summary.items()]
    await acreate_table_artifact(table=rows, key="medasr-summary", description=title)
