"""The run row's task runs leave the event loop free: the head start's requests go on.

A sync Prefect task run called on the loop holds it for its API calls; on a busy host,
with Prefect's server just started, 2.6 s passed at the flow's start without a request.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from flows.reporting import run_record
from flows.reporting.run_record import recorded_run

SLOW_S = 0.3


def _slow_start(**kwargs: object) -> int:
    time.sleep(SLOW_S)  # Prefect's API answering slowly
    return 7


def _slow_finish(**kwargs: object) -> None:
    finished.append(kwargs)
    time.sleep(SLOW_S)


finished: list[dict[str, object]] = []


async def _ticks_while(block: asyncio.Future[None]) -> int:
    ticks = 0
    while not block.done():
        await asyncio.sleep(0.02)
        ticks += 1
    return ticks


def test_starting_and_finishing_the_run_row_does_not_hold_the_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(run_record, "start_run_task", _slow_start)
    monkeypatch.setattr(run_record, "finish_run_task", _slow_finish)
    finished.clear()

    async def main() -> tuple[int, int]:
        record_ids: list[int] = []

        async def recorded() -> None:
            async with recorded_run(object(), source="s", language="en") as record:  # type: ignore[arg-type]
                record_ids.append(record.run_id)
                record.summary = None

        block = asyncio.ensure_future(recorded())
        ticks = await _ticks_while(block)
        await block
        return ticks, record_ids[0]

    ticks, run_id = asyncio.run(main())
    assert run_id == 7
    # two slow calls of 0.3 s: the loop went on ticking every 20 ms meanwhile
    assert ticks >= 2 * SLOW_S / 0.02 * 0.5
    assert finished == [{"store": finished[0]["store"], "run_id": 7,
                         "counts": dict.fromkeys(
                             ("done", "failed", "skipped", "requests", "retries", "files"), 0),
                         "status": "error"}]  # fmt: skip
