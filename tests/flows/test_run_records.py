"""What a flow run leaves behind besides transcripts: the run row in the store, the Prefect
artifacts, task runs that each handle a batch of files, and the progress total."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any
from uuid import UUID

import soundfile
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import (
    ArtifactFilter,
    ArtifactFilterFlowRunId,
    ArtifactFilterType,
    FlowRunFilter,
    FlowRunFilterId,
)

from config.settings import Settings
from devserver import RunningDevServer
from devserver.tone import encode_tone_dictation
from flows.backlog import transcribe_backlog
from flows.reporting.states import summary_from
from flows.reporting.summary import RunSummary
from flows.rerun import RERUN_SOURCE, rerun_failures
from storage import open_store
from storage.records import RunRecord
from storage.sources import normalize_source
from tasks.discovery.discover import discover_and_register
from tasks.transcription.progress import FileOutcome, set_progress_observer
from tests.helpers.flows import Corpus, run_flow


def latest_runs(settings: Settings, limit: int = 5) -> list[RunRecord]:
    store = open_store(settings.storage)
    try:
        with store.unit_of_work(read_only=True) as uow:
            return uow.runs.latest_runs(limit=limit)
    finally:
        store.dispose()


def run_with_state(root: Path, **kwargs: Any) -> tuple[RunSummary, UUID]:
    async def run() -> tuple[Any, RunSummary]:
        state = await transcribe_backlog(
            source=str(root), language="en-IN", return_state=True, **kwargs
        )
        return state, await summary_from(state)

    state, summary = asyncio.run(run())
    flow_run_id = state.state_details.flow_run_id
    assert flow_run_id is not None
    return summary, flow_run_id


def write_dictations(root: Path, count: int) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        audio = encode_tone_dictation(f"note {i}. stable.")
        soundfile.write(root / f"note-{i:02d}.wav", audio, 16000, subtype="PCM_16")


def test_a_run_row_records_the_counts(
    pinned: Settings, corpus: Corpus, flow_server: RunningDevServer
) -> None:
    summary, _ = run_with_state(corpus.root)

    [run] = latest_runs(pinned, limit=1)
    assert run.source == normalize_source(str(corpus.root))
    assert (run.language, run.status) == ("en-IN", "some_failed")
    assert run.finished_at is not None
    assert run.finished_at >= run.started_at
    counts = run.counts
    assert counts["done"] == len(corpus.texts) == summary.files_done
    assert counts["failed"] == 2
    assert counts["skipped"] == 1
    assert counts["files"] == len(corpus.texts) + len(corpus.bad)
    assert counts["requests"] == len(flow_server.ledger) == summary.requests
    assert counts["retries"] == 0
    assert counts["listed"] == len(corpus.texts) + len(corpus.bad)


def test_a_rerun_records_its_own_row(
    pinned: Settings, corpus: Corpus, flow_server: RunningDevServer
) -> None:
    run_with_state(corpus.root)

    run_flow(rerun_failures, language="en-IN")

    rerun, backlog = latest_runs(pinned, limit=2)
    assert backlog.source == normalize_source(str(corpus.root))
    assert (rerun.source, rerun.language, rerun.status) == (RERUN_SOURCE, "en-IN", "done")
    assert rerun.counts["requeued"] == 0  # the two failures are permanent
    assert rerun.counts["files"] == rerun.counts["requests"] == 0


def test_progress_artifact_ends_full_and_summary_is_published(
    pinned: Settings, corpus: Corpus, flow_server: RunningDevServer
) -> None:
    _, flow_run_id = run_with_state(corpus.root)

    artifacts = asyncio.run(_artifacts(flow_run_id))

    progress = [a for a in artifacts if a.type == "progress"]
    assert len(progress) == 1  # created once, then updated in place
    assert progress[0].key == "medasr-progress"
    assert progress[0].data == 100.0  # a fraction of 1.0: every expected file is through
    [table] = [a for a in artifacts if a.type == "table"]
    assert table.key == "medasr-summary"
    assert "patient" not in str(table.data)  # counts only, never transcript text


def test_a_task_run_handles_a_batch_of_files(
    pinned: Settings, tmp_path: Path, flow_server: RunningDevServer
) -> None:
    files, batch = 11, 4
    write_dictations(tmp_path / "many", files)

    summary, flow_run_id = run_with_state(tmp_path / "many", batch_size=batch)

    assert summary.files_done == files
    names = asyncio.run(_task_run_names(flow_run_id))
    batches = sorted(name for name in names if name.startswith("batch "))
    # ceil(11 / 4) = 3 batches carry the files, named by size; a claim that finds the
    # queue empty is no task run.
    assert batches == ["batch 1 (4 files)", "batch 2 (4 files)", "batch 3 (3 files)"], names
    assert sum(name.startswith("discover") for name in names) == 1


def test_progress_total_counts_only_this_source(
    pinned: Settings, tmp_path: Path, flow_server: RunningDevServer
) -> None:
    write_dictations(tmp_path / "ward-a", 3)
    write_dictations(tmp_path / "ward-a-annex", 2)  # a name prefix, not a subfolder
    store = open_store(pinned.storage)
    try:
        discover_and_register(
            source=str(tmp_path / "ward-a-annex"), language="en-IN", store=store, settle_s=0
        )
    finally:
        store.dispose()
    planned = _Planned()
    set_progress_observer(planned)
    try:
        summary, _ = run_with_state(tmp_path / "ward-a")
    finally:
        set_progress_observer(None)

    assert planned.files == [3]  # the annex's two pending files are not this run's
    assert summary.files_done == 3


class _Planned:
    def __init__(self) -> None:
        self.files: list[int] = []

    def on_planned(self, *, files: int) -> None:
        self.files.append(files)

    def on_request(self) -> None:
        pass

    def on_file_finished(self, outcome: FileOutcome) -> None:
        pass


async def _artifacts(flow_run_id: UUID) -> list[Any]:
    async with get_client() as client:
        return await client.read_artifacts(
            artifact_filter=ArtifactFilter(
                flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]),
                type=ArtifactFilterType(any_=["progress", "table"]),
            )
        )


async def _task_run_names(flow_run_id: UUID) -> list[str]:
    async with get_client() as client:
        runs = await client.read_task_runs(
            flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id]))
        )
    return [run.name for run in runs]
