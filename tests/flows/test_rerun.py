"""rerun-failures: the attempts limit and next-attempt time without --include-permanent;
with it, every failure of the language goes back to the queue."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from config.settings import Settings, pinned_settings
from devserver import RunningDevServer, start_devserver
from flows.backlog import transcribe_backlog
from flows.cli import app
from flows.reporting.summary import RunSummary
from flows.rerun import rerun_failures
from storage import open_store
from tests.helpers.cli import table_rows
from tests.helpers.flows import TOKEN, Corpus, run_flow, settings_for

PERMANENT = ("corrupt.mp3", "notes.wav")


def statuses(settings: Settings, root: Path) -> dict[str, tuple[str, int]]:
    store = open_store(settings.storage)
    try:
        with store.unit_of_work() as uow:
            return {
                str(Path(r.source).relative_to(root)): (r.status, r.attempts)
                for r in uow.item_queries.export_rows()
            }
    finally:
        store.dispose()


def pointed_at(settings: Settings, server: RunningDevServer, **pipeline: object) -> Settings:
    return settings.model_copy(
        update={
            "service": settings.service.model_copy(update={"base_url": server.url}),
            "pipeline": settings.pipeline.model_copy(update=pipeline),
        }
    )


@pytest.fixture
def down(prefect_harness: None) -> Iterator[RunningDevServer]:
    with start_devserver(token=TOKEN, port=0, rate_503=1.0) as server:
        yield server


@pytest.fixture
def up(prefect_harness: None) -> Iterator[RunningDevServer]:
    with start_devserver(token=TOKEN, port=0) as server:
        yield server


def rerun(settings: Settings, **kwargs: object) -> RunSummary:
    with pinned_settings(settings):
        return run_flow(rerun_failures, language="en-IN", **kwargs)


def test_rerun_honors_the_attempts_limit(
    corpus: Corpus, down: RunningDevServer, up: RunningDevServer, tmp_path: Path
) -> None:
    # MEDASR_MAX_ATTEMPTS=2 (conftest): a good file may be tried in two runs, no more.
    failing = pointed_at(settings_for(down, tmp_path / "m.db"), down, retry_delay_s=0.0)
    with pinned_settings(failing):
        run_flow(transcribe_backlog, source=str(corpus.root), language="en-IN")
    assert {statuses(failing, corpus.root)[n] for n in corpus.texts} == {("failed", 1)}

    second = rerun(failing)  # attempts 1 < 2: re-queued, tried, failed again
    assert second.requeued == len(corpus.texts)
    assert {statuses(failing, corpus.root)[n] for n in corpus.texts} == {("failed", 2)}

    sent = len(up.ledger)
    third = rerun(pointed_at(failing, up))  # attempts 2: at the limit, left alone
    assert third.requeued == 0
    assert len(up.ledger) == sent
    for name in PERMANENT:  # permanent failures are never re-queued without the flag
        assert statuses(failing, corpus.root)[name] == ("failed", 1)


def test_rerun_waits_for_the_next_attempt_time(
    corpus: Corpus, down: RunningDevServer, up: RunningDevServer, tmp_path: Path
) -> None:
    later = pointed_at(settings_for(down, tmp_path / "m.db"), down, retry_delay_s=3600.0)
    with pinned_settings(later):
        run_flow(transcribe_backlog, source=str(corpus.root), language="en-IN")

    summary = rerun(pointed_at(later, up))

    assert summary.requeued == 0
    assert len(up.ledger) == 0


def test_include_permanent_requeues_every_failure(
    corpus: Corpus, down: RunningDevServer, up: RunningDevServer, tmp_path: Path
) -> None:
    failing = pointed_at(settings_for(down, tmp_path / "m.db"), down, retry_delay_s=0.0)
    with pinned_settings(failing):
        run_flow(transcribe_backlog, source=str(corpus.root), language="en-IN")
    rerun(failing)  # the good files reach the attempts limit (2)
    assert rerun(failing).requeued == 0

    with pinned_settings(pointed_at(failing, up)):
        result = CliRunner().invoke(
            app, ["rerun-failures", "--language", "en-IN", "--include-permanent"]
        )

    assert result.exit_code == 1, result.output  # the permanent failures fail again
    summary = table_rows(result.output)
    # Permanent failures and retryable ones past the limit: all of them.
    assert summary["requeued"] == str(len(corpus.texts) + len(PERMANENT))
    assert summary["files done"] == str(len(corpus.texts))
    after = statuses(failing, corpus.root)
    assert all(after[name][0] == "done" for name in corpus.texts)
    assert {after[name] for name in PERMANENT} == {("failed", 2)}  # tried again, once


def test_include_permanent_does_not_wait_for_the_next_attempt_time(
    corpus: Corpus, down: RunningDevServer, up: RunningDevServer, tmp_path: Path
) -> None:
    later = pointed_at(settings_for(down, tmp_path / "m.db"), down, retry_delay_s=3600.0)
    with pinned_settings(later):
        run_flow(transcribe_backlog, source=str(corpus.root), language="en-IN")

    summary = rerun(pointed_at(later, up), include_permanent=True)

    assert summary.requeued == len(corpus.texts) + len(PERMANENT)
    assert summary.files_done == len(corpus.texts)


def test_include_skipped_requeues_silent_recordings(
    corpus: Corpus, up: RunningDevServer, tmp_path: Path
) -> None:
    settings = pointed_at(settings_for(up, tmp_path / "m.db"), up, retry_delay_s=0.0)
    with pinned_settings(settings):
        run_flow(transcribe_backlog, source=str(corpus.root), language="en-IN")
    assert statuses(settings, corpus.root)["silence.wav"] == ("skipped", 1)
    # A failure flag leaves a recording judged silent where it is.
    assert rerun(settings, include_permanent=True).requeued == len(PERMANENT)
    assert statuses(settings, corpus.root)["silence.wav"] == ("skipped", 1)

    with pinned_settings(settings):
        result = CliRunner().invoke(
            app, ["rerun-failures", "--language", "en-IN", "--include-skipped"]
        )

    # Judged again (still silent: nothing sent) and counted: exit 1, not a quiet 0.
    assert result.exit_code == 1, result.output
    summary = table_rows(result.output)
    assert summary["requeued"] == "1"
    assert summary["files skipped"] == "1"
    assert statuses(settings, corpus.root)["silence.wav"] == ("skipped", 2)
    # Named by its path in the source of the run that found it, in the line and the list.
    assert "[1/1] skipped (silent_audio): silence.wav (" in result.output
    assert "skipped: silence.wav: " in result.output
    assert f"{corpus.root}/silence.wav" not in result.output
