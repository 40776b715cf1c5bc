"""medasr's task runs ask Prefect's server for nothing before they start.

Prefect takes a slot of each tag's concurrency limit from its server before a tagged task
run begins (prefect/task_engine.py), even where no limit exists. In a 600-recording night
that call waited 0.5-2.2 s at batch boundaries, while the next batch could not start and
no request was in flight. The flow run carries medasr's tags; its task runs carry none.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from prefect import flow
from prefect.client.orchestration._concurrency_limits.client import (
    ConcurrencyLimitAsyncClient,
    ConcurrencyLimitClient,
)
from prefect.utilities.annotations import quote

from storage.interface import UnitOfWorkFactory
from tasks import steps


def test_medasr_task_runs_take_no_concurrency_slot(
    prefect_harness: None, store: UnitOfWorkFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    slots_asked: list[list[str]] = []
    real_async = ConcurrencyLimitAsyncClient.increment_concurrency_slots_with_lease
    real_sync = ConcurrencyLimitClient.increment_concurrency_slots_with_lease

    async def counted_async(self: Any, names: list[str], *args: Any, **kwargs: Any) -> Any:
        slots_asked.append(list(names))
        return await real_async(self, names, *args, **kwargs)

    def counted_sync(self: Any, names: list[str], *args: Any, **kwargs: Any) -> Any:
        slots_asked.append(list(names))
        return real_sync(self, names, *args, **kwargs)

    async def no_files(items: Sequence[object], *, ctx: object) -> list[object]:
        return []

    for client, counted in [
        (ConcurrencyLimitAsyncClient, counted_async),
        (ConcurrencyLimitClient, counted_sync),
    ]:
        monkeypatch.setattr(client, "increment_concurrency_slots_with_lease", counted)
    monkeypatch.setattr(steps, "process_batch", no_files)
    batches: list[object] = []

    @flow
    async def night() -> int:
        # One sync task run (the run row) and one async (a batch), as a night has them.
        run_id = steps.start_run_task(store=store, source="/night", language="en-IN")
        await steps.transcribe_batch_task(quote([]), ctx=quote(None), outcomes=batches.extend)
        steps.finish_run_task(store=store, run_id=run_id, counts={}, status="done")
        return run_id

    run_id = asyncio.run(night())
    with store.unit_of_work(read_only=True) as uow:
        [row] = uow.runs.latest_runs()
    assert (row.id, row.status) == (run_id, "done")
    assert slots_asked == []
