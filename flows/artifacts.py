"""The run's Prefect artifacts: the summary a person reads after the night."""

from __future__ import annotations

from prefect.artifacts import acreate_table_artifact

from flows.bootstrap import Run
from flows.summary import RunSummary

SUMMARY_KEY = "medasr-summary"


async def publish_summary(run: Run, summary: RunSummary, *, title: str) -> None:
    """Attach the summary to the flow run as a table artifact, a row per recording to check."""
    rows: list[dict[str, object]] = [
        {"metric": name, "value": value} for name, value in summary.rows()
    ]
    rows += [
        {"metric": f"{row.status}: {row.recording}", "value": row.reason}
        for row in summary.to_check
    ]
    await acreate_table_artifact(table=rows, key=SUMMARY_KEY, description=title)
