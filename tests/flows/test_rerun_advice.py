"""After `rerun-failures --include-skipped`, the summary does not advise running it again."""

from __future__ import annotations

from flows.reporting.attention import CheckRow, to_check_lines

SILENT = CheckRow(recording="ward/quiet.wav", status="skipped", reason="no speech found")


def test_a_plain_run_advises_re_queueing_skipped_recordings() -> None:
    lines = to_check_lines([SILENT], total=1)
    assert any("--include-skipped" in line for line in lines)


def test_a_rerun_that_re_judged_skipped_recordings_does_not_advise_it_again() -> None:
    lines = to_check_lines([SILENT], total=1, skipped_rejudged=True)
    assert not any("--include-skipped" in line for line in lines)
    assert any("judged afresh" in line for line in lines)
