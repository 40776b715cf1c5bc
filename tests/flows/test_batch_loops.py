"""The batch loops of a drain side by side: one loop's store error ends the drain only
once the other loop's batch in flight has ended (flows/batch_loops.py).

The loops share one BatchContext (its decode threads, its HTTP client); a loop's error
raised at once left the other loop's batch running after the drain closed that context:
a file closing its decoder then met a shut-down thread pool ("cannot schedule new
futures after shutdown"), and its requests a closed client.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from devserver import RunningDevServer, start_devserver
from flows import batch_loops
from flows.prefect_runtime.head_start import HeadStart
from flows.setup.bootstrap import Run, RunRequest, bootstrap
from storage.errors import StoreUnavailable
from tasks.discovery.discover import discover_and_register
from tasks.transcription.progress import RunStats
from tests.flows.prefect_runtime.test_head_start import recordings
from tests.helpers.flows import settings_for

TOKEN = "batch-loops-token"
LATENCY_MS = 1500  # a file in flight long enough for the other loop's claim to fail


@pytest.fixture
def service() -> Iterator[RunningDevServer]:
    with start_devserver(token=TOKEN, port=0, engine="tone", latency_ms=LATENCY_MS) as server:
        yield server


def failing_second_claim(run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first claim as it is; the second waits until the first file's request is out
    (the first loop's batch in flight), then finds the store locked."""
    claim = batch_loops.claim_batch
    claims = 0

    async def claim_or_fail(**kwargs: Any) -> Any:
        nonlocal claims
        claims += 1
        if claims == 1:
            return await claim(**kwargs)
        while run.stats.requests < 1:
            await asyncio.sleep(0.005)
        raise StoreUnavailable("database unavailable: OperationalError: database is locked")

    monkeypatch.setattr(batch_loops, "claim_batch", claim_or_fail)


def stopped(pool: ThreadPoolExecutor) -> bool:
    try:
        pool.submit(int).result()
    except RuntimeError:  # "cannot schedule new futures after shutdown"
        return True
    return False


def test_a_loops_store_error_waits_for_the_other_loops_batch_before_the_drain_ends(
    tmp_path: Path, service: RunningDevServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = recordings(tmp_path / "s", 2)
    settings = settings_for(service, tmp_path / "medasr.db", token=TOKEN)
    settings = settings.model_copy(
        update={"pipeline": settings.pipeline.model_copy(update={"batch_size": 1})}
    )
    seen: dict[str, object] = {}
    with bootstrap(settings, RunRequest(language="en-IN", source=str(source))) as run:
        assert run.source is not None
        discover_and_register(
            source=run.source.location, language="en-IN", store=run.store, settle_s=0.0
        )
        failing_second_claim(run, monkeypatch)

        async def drain_alone() -> None:
            head = HeadStart(run)
            await head.prepared()
            async with asyncio.timeout(60):
                while not head.idle:  # the head start's loops have ended
                    await asyncio.sleep(0.005)
            seen["finished when the loops ended"] = head.result.finished
            with pytest.raises(StoreUnavailable) as raised:
                await head.stop()
            seen["tasks left"] = len(asyncio.all_tasks()) - 1  # all but this one
            seen["error"] = raised.value.message
            seen["decode threads stopped"] = stopped(head.ctx.decode_pool)

        asyncio.run(drain_alone())
        with run.store.unit_of_work() as uow:
            statuses = sorted(row.status for row in uow.item_queries.export_rows())

    assert seen == {
        "finished when the loops ended": 1,  # the other loop's file, answered and recorded
        "tasks left": 0,
        "error": "database unavailable: OperationalError: database is locked",
        "decode threads stopped": True,  # the context closed, whatever the drain raised
    }
    assert statuses == ["done", "pending"]
    assert len(service.ledger) == 1


def test_an_error_beside_the_loops_stops_their_claiming_and_waits_for_their_batches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The flow's drain runs its loops beside the head start's batches still in flight
    (`alongside`): the head start's error must not leave the flow's batches running."""
    events: list[str] = []
    batch_started = asyncio.Event()

    async def claim(**kwargs: Any) -> list[str]:
        events.append("claim")
        return ["item"]

    async def transcribe(items: Any, name: str) -> list[Any]:
        batch_started.set()
        await asyncio.sleep(0.2)
        events.append(f"{name} ended")
        return []

    async def head_start_fails() -> None:
        await batch_started.wait()
        raise StoreUnavailable("database unavailable: OperationalError: database is locked")

    monkeypatch.setattr(batch_loops, "claim_batch", claim)
    ctx: Any = SimpleNamespace(gate=SimpleNamespace(stopped=None), audio_budget=None)
    loops = batch_loops.BatchLoops(
        ctx=ctx,
        result=batch_loops.DrainResult(stats=RunStats(), wall_s=0.0, planned=0),
        language=None,
        source_prefix=None,
        batch_size=1,
        budget=batch_loops.Budget(None),
        transcribe=transcribe,
    )

    async def drain() -> None:
        with pytest.raises(StoreUnavailable):
            await loops.run_side_by_side(loops=1, alongside=head_start_fails())
        events.append("raised")

    asyncio.run(drain())

    assert events == ["claim", "batch 1 (1 files) ended", "raised"]
