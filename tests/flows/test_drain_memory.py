"""A drain keeps counts, not every file's outcome: only the recordings a person must check."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import cast

import pytest
from prefect import flow
from prefect.context import FlowRunContext

from flows.drain import DrainResult, _as_task_run
from storage.records import ItemRecord
from tasks import steps
from tasks.transcription.batch import BatchContext
from tasks.transcription.progress import FileOutcome, RunStats


def test_done_files_are_counted_not_kept() -> None:
    result = DrainResult(stats=RunStats(), wall_s=0.0, planned=4)

    result.add(
        [
            FileOutcome("/a.wav", "done"),
            FileOutcome("/b.wav", "failed", error_kind="corrupt_audio", reason="bad header"),
            FileOutcome("/c.wav", "released"),
            FileOutcome("/d.wav", "skipped", reason="silent"),
        ]
    )

    assert result.finished == 4
    assert [o.source_uri for o in result.outcomes] == ["/b.wav", "/d.wav"]


def test_a_batch_task_run_leaves_nothing_per_file_in_the_flow_run(
    prefect_harness: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Prefect remembers a task's return value and each of its elements for the whole flow
    run; the batch task hands its outcomes over instead, so 10^6 files stay flat."""
    done = [FileOutcome(f"/a/{n}.wav", "done") for n in range(50)]

    async def process_batch(items: Sequence[ItemRecord], *, ctx: BatchContext) -> list[FileOutcome]:
        return list(done)

    monkeypatch.setattr(steps, "process_batch", process_batch)

    @flow
    async def drain_two_batches() -> tuple[list[FileOutcome], int]:
        transcribe = _as_task_run(cast(BatchContext, None))  # the fake needs no context
        outcomes = [*await transcribe([], "batch 1"), *await transcribe([], "batch 2")]
        context = FlowRunContext.get()
        assert context is not None
        return outcomes, len(context.run_results)

    outcomes, remembered = asyncio.run(drain_two_batches())

    assert outcomes == done + done
    assert remembered < len(done)  # before: the list and each outcome, per batch


def test_batch_task_runs_leave_no_entry_each_in_the_flow_run(
    prefect_harness: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Prefect keeps an entry per task run for the whole flow run (the assets it would hand
    downstream, `FlowRunContext.task_run_assets`: an empty set for medasr's tasks); 20,000
    batches of a 10^6-file run would keep 20,000, so the drain forgets the empty ones."""

    async def process_batch(items: Sequence[ItemRecord], *, ctx: BatchContext) -> list[FileOutcome]:
        return []

    monkeypatch.setattr(steps, "process_batch", process_batch)

    @flow
    async def drain_batches(batches: int) -> int:
        transcribe = _as_task_run(cast(BatchContext, None))  # the fake needs no context
        for n in range(batches):
            await transcribe([], f"batch {n + 1}")
        context = FlowRunContext.get()
        assert context is not None
        return len(context.task_run_assets)

    assert asyncio.run(drain_batches(5)) == 0  # before: one per task run
