"""The state a flow run ends in (flows/reporting/states.py): what each way a night can end says."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from prefect.client.orchestration import get_client

from config.settings import pinned_settings
from devserver import RunningDevServer
from flows.backlog import transcribe_backlog
from flows.drain import DrainResult
from flows.reporting.states import final_state, summary_from
from flows.reporting.summary import RunSummary, StopReason, summarize
from storage.records import SkippedFile
from tasks.discovery.discover import Discovery
from tasks.transcription.progress import FileOutcome, RunStats
from tests.helpers.flows import Corpus, settings_for


@pytest.mark.parametrize(
    ("summary", "kind", "message"),
    [
        (RunSummary(files_done=4), "COMPLETED", "4 done"),
        (
            RunSummary(files_done=4, files_failed=2, files_unreadable=1, files_skipped=1,
                       files_needs_review=1),
            "FAILED",
            "3 failed, 1 held for review, 1 skipped; 4 done",
        ),
        (RunSummary(files_needs_review=1), "FAILED", "1 held for review; 0 done"),
        (
            RunSummary(stopped=StopReason.CREDENTIALS, stop_message="token rejected (403)"),
            "FAILED",
            "credentials rejected: token rejected (403) (exit code 3)",
        ),
        (
            RunSummary(stopped=StopReason.CONFIGURATION, stop_message="TLS not verified"),
            "FAILED",
            "stopped by configuration: TLS not verified (exit code 2)",
        ),
        (RunSummary(files_done=1, stopped=StopReason.INTERRUPTED), "CANCELLED",
         "interrupted: 1 done"),
    ],
    ids=["all-done", "failures", "held-only", "credentials", "configuration", "interrupted"],
)  # fmt: skip
def test_each_ending_has_its_state_and_message(
    summary: RunSummary, kind: str, message: str
) -> None:
    state = final_state(summary)

    assert (state.type.value, state.message) == (kind, message)
    assert asyncio.run(summary_from(state)) == summary


def test_a_run_whose_only_problems_are_unreadable_files_ends_failed() -> None:
    stats = RunStats()
    for name in ("a.wav", "b.wav"):
        stats.add(FileOutcome(f"/archive/{name}", "done"))
    drained = DrainResult(stats=stats, wall_s=1.0, planned=2)
    unreadable = SkippedFile("/archive/locked.wav", "permission denied", unreadable=True)
    discovery = Discovery(
        source="/archive", listed=3, new=3, changed=0, unchanged=0,
        skipped=(unreadable,), unreadable=1,
    )  # fmt: skip

    state = final_state(summarize(drained, discovery=discovery, source_roots=("/archive",)))

    assert (state.type.value, state.message) == ("FAILED", "1 failed; 2 done")
    assert asyncio.run(summary_from(state)).exit_code == 1


def test_rejected_credentials_end_the_flow_run_failed_with_the_reason(
    prefect_harness: None, flow_server: RunningDevServer, corpus: Corpus, tmp_path: Path
) -> None:
    wrong = settings_for(flow_server, tmp_path / "medasr.db", token="not-the-token")

    async def run() -> tuple[Any, Any]:
        state = await transcribe_backlog(
            source=str(corpus.root), language="en-IN", return_state=True
        )
        async with get_client() as client:
            stored = await client.read_flow_run(state.state_details.flow_run_id)
        return state, stored

    with pinned_settings(wrong):
        state, stored = asyncio.run(run())

    assert stored.state.type.value == "FAILED"
    assert stored.state.message.startswith("credentials rejected: ")
    assert stored.state.message.endswith("(exit code 3)")
    assert "not-the-token" not in stored.state.message
    assert asyncio.run(summary_from(state)).exit_code == 3
