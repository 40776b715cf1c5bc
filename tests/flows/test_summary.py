"""The summary's exit code: what each way a run can end tells cron and the operator."""

from __future__ import annotations

import pytest

from flows.drain import DrainResult
from flows.summary import exit_code_for, run_status, summarize
from service.errors import CredentialsRejected, TlsNotVerified
from tasks.errors import RunInterrupted
from tasks.gate import RunStop
from tasks.progress import FileOutcome, RunStats


def drained(*outcomes: str, stopped: RunStop | None = None) -> DrainResult:
    stats = RunStats()
    for outcome in outcomes:
        stats.add(FileOutcome(f"/a/{outcome}.wav", outcome))
    return DrainResult(stats=stats, wall_s=1.0, planned=len(outcomes), stopped=stopped)


@pytest.mark.parametrize(
    ("result", "code", "status"),
    [
        (drained("done", "skipped"), 0, "done"),
        (drained("done", "failed"), 1, "some_failed"),
        (drained("done", "released", stopped=TlsNotVerified("fix the CA")), 2, "stopped"),
        (drained("done", "released", stopped=CredentialsRejected("bad token")), 3, "stopped"),
        (drained("done", "released", stopped=RunInterrupted("ctrl-c")), 130, "interrupted"),
    ],
    ids=["all-done", "some-failed", "certificate-not-verified", "credentials-rejected", "ctrl-c"],
)
def test_exit_code_and_run_status(result: DrainResult, code: int, status: str) -> None:
    summary = summarize(result)

    assert exit_code_for(summary) == summary["exit_code"] == code
    assert run_status(summary) == status
