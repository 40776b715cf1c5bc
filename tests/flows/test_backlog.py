"""The backlog and rerun flows end to end: devserver over a socket, SQLite, Prefect harness."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import numpy as np
import pytest
import soundfile
from typer.testing import CliRunner

from config.settings import Settings, pinned_settings
from devserver import RunningDevServer, start_devserver
from devserver.tone import encode_tone_dictation
from flows.backlog import transcribe_backlog
from flows.cli import app
from flows.reporting.summary import RunSummary
from flows.rerun import rerun_failures
from storage import open_store
from tests.helpers.cli import table_rows
from tests.helpers.flows import TOKEN, Corpus, run_flow, settings_for


def rows_by_name(settings: Settings, root: Path) -> dict[str, object]:
    store = open_store(settings.storage)
    try:
        with store.unit_of_work() as uow:
            return {
                str(Path(r.source).relative_to(root)): r for r in uow.item_queries.export_rows()
            }
    finally:
        store.dispose()


def run_backlog(root: Path, **kwargs) -> RunSummary:
    return run_flow(transcribe_backlog, source=str(root), language="en-IN", **kwargs)


def successes(server: RunningDevServer) -> int:
    return sum(1 for e in server.ledger.entries() if e.status == 200)


def test_mixed_folder_ends_with_right_statuses_and_texts(
    pinned: Settings, corpus: Corpus, flow_server: RunningDevServer
) -> None:
    summary = run_backlog(corpus.root)

    rows = rows_by_name(pinned, corpus.root)
    assert set(rows) == set(corpus.texts) | set(corpus.bad)
    for name, text in corpus.texts.items():
        assert rows[name].status == "done", (name, rows[name].error_message)
        assert rows[name].text == text
    for name, status in corpus.bad.items():
        assert rows[name].status == status, name
        assert rows[name].error_message, name
    assert rows["long/dictation.wav"].chunks > 1
    assert summary.files_done == len(corpus.texts)
    assert summary.files_failed == 2
    assert summary.exit_code == 1
    # Every chunk of the good files reached the service once; the silent file never did.
    assert successes(flow_server) == sum(rows[n].chunks for n in corpus.texts)


def test_second_run_sends_nothing(
    pinned: Settings, corpus: Corpus, flow_server: RunningDevServer
) -> None:
    run_backlog(corpus.root)
    sent = len(flow_server.ledger.entries())

    summary = run_backlog(corpus.root)

    assert len(flow_server.ledger.entries()) == sent
    assert summary.requests == 0


def test_changed_file_is_transcribed_again(
    pinned: Settings, corpus: Corpus, flow_server: RunningDevServer
) -> None:
    run_backlog(corpus.root)
    sent = successes(flow_server)
    changed = corpus.root / "admission.wav"
    soundfile.write(changed, encode_tone_dictation("discharged home today."), 16000)

    run_backlog(corpus.root)

    assert rows_by_name(pinned, corpus.root)["admission.wav"].text == "discharged home today."
    assert successes(flow_server) == sent + 1


def test_copied_file_is_not_paid_for_twice(
    pinned: Settings, corpus: Corpus, flow_server: RunningDevServer
) -> None:
    run_backlog(corpus.root)
    sent = len(flow_server.ledger.entries())
    (corpus.root / "copy.wav").write_bytes((corpus.root / "admission.wav").read_bytes())

    run_backlog(corpus.root)

    assert len(flow_server.ledger.entries()) == sent
    rows = rows_by_name(pinned, corpus.root)
    assert rows["copy.wav"].text == rows["admission.wav"].text


def test_expiring_token_stops_run_with_exit_3_and_items_stay_pending(
    prefect_harness: None, corpus: Corpus, tmp_path: Path
) -> None:
    with start_devserver(token=TOKEN, port=0, auth_fail_after=2) as server:
        settings = settings_for(server, tmp_path / "m.db")
        settings = settings.model_copy(
            update={"pipeline": settings.pipeline.model_copy(update={"concurrency": 2})}
        )
        with pinned_settings(settings):
            result = CliRunner().invoke(app, ["run", str(corpus.root), "--language", "en-IN"])

        assert result.exit_code == 3, result.output
        assert "MEDASR_TOKEN" in result.output
        statuses = server.ledger.statuses()
        # Stopped within concurrency + 1 requests after the first 403.
        assert len(statuses) - statuses.index(403) <= 2 + 1
        rows = rows_by_name(settings, corpus.root)
        assert not [r for r in rows.values() if r.error_kind == "credentials_rejected"]
        assert {r.status for r in rows.values()} <= {"pending", "done", "failed", "skipped"}
        assert any(r.status == "pending" for r in rows.values())
        good = settings.model_copy(
            update={"service": settings.service.model_copy(update={"base_url": server.url})}
        )
    with (
        start_devserver(token=TOKEN, port=0) as fresh,
        pinned_settings(
            good.model_copy(
                update={"service": good.service.model_copy(update={"base_url": fresh.url})}
            )
        ),
    ):
        summary = run_backlog(corpus.root)
    # This run finished the rest. Bad files the first run did not reach before it stopped
    # fail or are skipped now, and a run that fails or skips a file exits 1.
    to_check = ("files_failed", "files_unreadable", "files_skipped", "files_needs_review")
    not_all_done = any(getattr(summary, k) for k in to_check)
    assert summary.exit_code == (1 if not_all_done else 0), summary
    rows = rows_by_name(settings, corpus.root)
    assert all(rows[name].status == "done" for name in corpus.texts)


def dry_run_plan(root: Path) -> dict[str, str]:
    result = CliRunner().invoke(app, ["run", str(root), "--language", "en-IN", "--dry-run"])
    assert result.exit_code == 0, result.output
    return table_rows(result.output)


def test_dry_run_plans_what_the_run_sends(
    pinned: Settings, corpus: Corpus, flow_server: RunningDevServer
) -> None:
    plan = dry_run_plan(corpus.root)

    assert flow_server.ledger.entries() == []
    assert rows_by_name(pinned, corpus.root) == {}
    assert plan["files"] == str(len(corpus.texts) + len(corpus.bad))
    assert plan["files to transcribe"] == str(len(corpus.texts))
    assert plan["files silent"] == "1"  # reported apart, not a request
    assert plan["files not decodable"] == "2"
    assert plan["files unchanged"] == "0"
    assert int(plan["chunks"]) > len(corpus.texts)  # the long dictation needs several
    assert plan["sent"] == "0"

    run_backlog(corpus.root)

    # The plan was exact: one request per chunk the run sent (no faults, no retries).
    assert int(plan["requests"]) == successes(flow_server) == len(flow_server.ledger)
    rows = rows_by_name(pinned, corpus.root)
    assert int(plan["chunks"]) == sum(rows[name].chunks for name in corpus.texts)


def test_dry_run_names_the_files_not_decodable(
    pinned: Settings, corpus: Corpus, flow_server: RunningDevServer
) -> None:
    result = CliRunner().invoke(app, ["run", str(corpus.root), "--language", "en-IN", "--dry-run"])
    assert result.exit_code == 0, result.output
    named = [line for line in result.output.splitlines() if line.startswith("not decodable:")]
    failing = sorted(name for name, status in corpus.bad.items() if status == "failed")
    assert len(named) == 1, result.output
    assert sorted(named[0].removeprefix("not decodable:").strip().split(", ")) == failing
    assert str(corpus.root) not in result.output  # relative names, as a person reads them


def test_dry_run_after_a_run_plans_nothing(
    pinned: Settings, corpus: Corpus, flow_server: RunningDevServer
) -> None:
    run_backlog(corpus.root)
    sent = len(flow_server.ledger)

    plan = dry_run_plan(corpus.root)

    assert plan["requests"] == plan["chunks"] == plan["files to transcribe"] == "0"
    assert plan["files unchanged"] == str(len(corpus.texts) + len(corpus.bad))
    assert len(flow_server.ledger) == sent


def test_dry_run_counts_a_copy_and_a_change(
    pinned: Settings, corpus: Corpus, flow_server: RunningDevServer
) -> None:
    run_backlog(corpus.root)
    (corpus.root / "copy.wav").write_bytes((corpus.root / "admission.wav").read_bytes())
    soundfile.write(corpus.root / "ward" / "new.wav", encode_tone_dictation("bp stable."), 16000)

    plan = dry_run_plan(corpus.root)

    assert plan["files same content"] == "1"  # the copy costs nothing
    assert plan["files to transcribe"] == "1"
    assert plan["requests"] == "1"


def test_unsupported_language_is_a_usage_error(pinned: Settings, corpus: Corpus) -> None:
    result = CliRunner().invoke(app, ["run", str(corpus.root), "--language", "xx"])
    assert result.exit_code == 2


def test_rerun_requeues_retryable_failures(
    prefect_harness: None, corpus: Corpus, tmp_path: Path
) -> None:
    with start_devserver(token=TOKEN, port=0, rate_503=1.0) as down:
        settings = settings_for(down, tmp_path / "r.db")
        settings = settings.model_copy(
            update={"pipeline": settings.pipeline.model_copy(update={"retry_delay_s": 0.0})}
        )
        with pinned_settings(settings):
            first = run_backlog(corpus.root)
    assert first.files_failed >= len(corpus.texts)
    with start_devserver(token=TOKEN, port=0) as up:
        retry_now = settings.model_copy(
            update={"service": settings.service.model_copy(update={"base_url": up.url})}
        )
        with pinned_settings(retry_now):
            summary = run_flow(rerun_failures, language="en-IN")
    assert summary.requeued == len(corpus.texts)
    assert summary.files_done == len(corpus.texts)
    rows = rows_by_name(settings, corpus.root)
    assert rows["corrupt.mp3"].status == "failed"  # permanent: not re-queued


@pytest.mark.parametrize("rate_hz", [8000, 44100])
def test_silence_is_skipped_not_sent(
    pinned: Settings, tmp_path: Path, flow_server: RunningDevServer, rate_hz: int
) -> None:
    root = tmp_path / "quiet"
    root.mkdir()
    soundfile.write(root / "empty-room.wav", np.zeros(rate_hz * 3, dtype=np.int16), rate_hz)

    summary = run_backlog(root)

    assert summary.files_skipped == 1
    assert flow_server.ledger.entries() == []


def test_log_lines_name_each_recording_by_its_path_in_the_source(
    pinned: Settings,
    corpus: Corpus,
    flow_server: RunningDevServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    (corpus.root / "ward" / "gone.wav").symlink_to(corpus.root / "nowhere.wav")
    caplog.set_level(logging.INFO)

    run_backlog(corpus.root)

    lines = [r.getMessage() for r in caplog.records if r.name.startswith(("medasr.", "tasks."))]
    for start in (
        "notes.wav failed (not_audio, retryable=False): ",
        "corrupt.mp3 failed (",
        "silence.wav skipped (silent_audio): ",
        "cannot read ward/gone.wav (broken symbolic link)",
    ):
        assert any(line.startswith(start) for line in lines), (start, lines)
    assert not [line for line in lines if re.search(r"\bitem \d", line)]
    assert (
        "notes.wav failed (not_audio, retryable=False): not an audio file: notes.wav "
        "(it holds text)"
    ) in lines
