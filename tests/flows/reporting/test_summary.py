"""The summary's exit code: what each way a run can end tells cron and the operator."""

from __future__ import annotations

import pytest

from config.errors import RunInterrupted
from flows.cli.console import print_summary
from flows.drain import DrainResult
from flows.reporting.attention import CheckRow
from flows.reporting.summary import RunSummary, summarize
from service.errors import CredentialsRejected, TlsNotVerified
from storage.records import SkippedFile
from tasks.discovery.discover import Discovery
from tasks.transcription.progress import FileOutcome, RunStats
from tests.helpers.summaries import drained


@pytest.mark.parametrize(
    ("result", "code", "status"),
    [
        (drained("done"), 0, "done"),
        (drained("done", "skipped"), 1, "some_skipped"),
        (drained("done", "failed"), 1, "some_failed"),
        (drained("skipped", "failed"), 1, "some_failed"),
        (drained("done", "released", stopped=TlsNotVerified("fix the CA")), 2, "stopped"),
        (drained("done", "released", stopped=CredentialsRejected("bad token")), 3, "stopped"),
        (drained("done", "released", stopped=RunInterrupted("ctrl-c")), 130, "interrupted"),
    ],
    ids=[
        "all-done",
        "some-skipped",
        "some-failed",
        "failed-and-skipped",
        "certificate-not-verified",
        "credentials-rejected",
        "ctrl-c",
    ],
)
def test_exit_code_and_run_status(result: DrainResult, code: int, status: str) -> None:
    summary = summarize(result)

    assert summary.exit_code == dict(summary.rows())["exit_code"] == code
    assert summary.run_status() == status


ROOT = "/archive/ward 7"


def outcome(name: str, status: str, reason: str | None = None) -> FileOutcome:
    return FileOutcome(f"{ROOT}/{name}", status, error_kind=f"{status}_kind", reason=reason)  # type: ignore[arg-type]


def summary_of(*outcomes: FileOutcome, discovery: Discovery | None = None) -> RunSummary:
    stats = RunStats()
    for one in outcomes:
        stats.add(one)
    result = DrainResult(stats=stats, wall_s=1.0, planned=len(outcomes), outcomes=list(outcomes))
    return summarize(result, discovery=discovery, source_roots=(ROOT,))


def test_summary_lists_what_to_check_by_path_in_the_source_with_its_reason() -> None:
    unreadable = SkippedFile(f"{ROOT}/pipe.wav", "not a regular file", unreadable=True)
    growing = SkippedFile(f"{ROOT}/new.wav", "still being written")
    discovery = Discovery(
        source=ROOT, listed=4, new=4, changed=0, unchanged=0,
        skipped=(unreadable, growing), unreadable=1,
    )  # fmt: skip
    summary = summary_of(
        outcome("a.wav", "done"),
        outcome("beds/quiet.wav", "skipped", "no speech in the recording: a steady tone"),
        outcome("new\nline.mp3", "failed", "not an audio file:\nit holds text"),
        outcome("b.wav", "released"),
        outcome("c.wav", "lost"),
        discovery=discovery,
    )

    listed = [(r.status, r.recording, r.reason) for r in summary.to_check]
    assert listed == [
        ("failed", "new\\nline.mp3", "not an audio file:\\nit holds text"),
        ("failed", "pipe.wav", "not a regular file"),
        ("skipped", "beds/quiet.wav", "no speech in the recording: a steady tone"),
    ]
    assert summary.to_check_total == 3


def test_a_status_without_a_reason_is_listed_by_its_kind() -> None:
    # Any status other than done, released or lost is listed (needs_review included).
    summary = summary_of(outcome("x.wav", "needs_review"))  # type: ignore[arg-type]

    assert summary.to_check == (
        CheckRow(
            recording="x.wav", status="needs_review", reason="needs_review_kind",
            kind="needs_review_kind",
        ),
    )  # fmt: skip


def test_printed_summary_lists_twenty_and_says_how_to_see_the_rest(
    capsys: pytest.CaptureFixture[str],
) -> None:
    names = [f"f{i:02d}.wav" for i in range(25)]
    summary = summary_of(*(outcome(n, "failed", f"broken {n}") for n in names))

    print_summary(summary, title="medasr run")

    out = capsys.readouterr().out
    listed = [line.strip() for line in out.splitlines() if "broken" in line]
    assert listed == [f"failed: {n}: broken {n}" for n in names[:20]]
    assert "5 more" in out
    assert "medasr status --failures 25" in out
    assert len(summary.to_check) == 20
    assert summary.to_check_total == 25


def test_printed_summary_shows_stop_reasons_only_when_true(
    capsys: pytest.CaptureFixture[str],
) -> None:
    print_summary(summarize(drained("done")), title="medasr run")
    calm = capsys.readouterr().out
    print_summary(summarize(drained("done", stopped=RunInterrupted("ctrl-c"))), title="medasr run")
    stopped = capsys.readouterr().out

    for row in ("credentials rejected", "stopped by configuration", "interrupted", "False"):
        assert row not in calm
    assert "files done" in calm
    assert "files skipped" in calm  # its own line, even at 0
    assert "interrupted" in stopped
    assert "False" not in stopped


def test_thirty_failures_never_hide_a_recording_skipped_as_silent() -> None:
    failures = [outcome(f"f{i:02d}.wav", "failed", "broken") for i in range(30)]
    silent = outcome("zz/quiet.wav", "skipped", f"no speech in {ROOT}/zz/quiet.wav")

    summary = summary_of(*failures, silent)

    listed = summary.to_check
    assert len(listed) == 20
    assert summary.to_check_total == 31
    assert (listed[-1].recording, listed[-1].status, listed[-1].reason) == (
        "zz/quiet.wav",
        "skipped",
        "no speech in zz/quiet.wav",  # the path in the reason is shortened too
    )
    assert [row.recording for row in listed[:-1]] == [f"f{i:02d}.wav" for i in range(19)]
