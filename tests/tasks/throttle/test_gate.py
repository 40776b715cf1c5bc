"""The request gate: slots, the rate cap (including rates under one per second), the stop."""

from __future__ import annotations

import asyncio
import time

import pytest

from service.errors import CredentialsRejected
from tasks.throttle.gate import RequestGate


def pace_times(gate: RequestGate, attempts: int) -> list[float]:
    async def go() -> list[float]:
        started = time.monotonic()
        times = []
        for _ in range(attempts):
            await gate.pace()
            times.append(time.monotonic() - started)
        return times

    return asyncio.run(go())


@pytest.mark.parametrize(
    ("rate", "attempts", "earliest_last_s"),
    [(0.5, 2, 2.0), (4.0, 8, 1.0)],
    ids=["half-a-request-per-second", "four-per-second"],
)
def test_rate_cap_spaces_attempts(rate: float, attempts: int, earliest_last_s: float) -> None:
    times = pace_times(RequestGate(concurrency=1, requests_per_s=rate), attempts)

    # The first burst is free; after it, attempts come no faster than the rate.
    assert times[-1] >= earliest_last_s - 0.1


def test_a_stopped_gate_admits_nothing() -> None:
    gate = RequestGate(concurrency=2)
    gate.stop(CredentialsRejected("set MEDASR_TOKEN"))

    async def go() -> None:
        await gate.pace()

    with pytest.raises(CredentialsRejected):
        asyncio.run(go())
