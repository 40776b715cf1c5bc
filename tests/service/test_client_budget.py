"""The small retry budget of HTTP 500 counts 500s, not every attempt of the call.

A 500 ("file not passed", which we never do) gets one retry; a 429 or 503 before it must
not use that retry up, while the overall budget (max_attempts) still bounds the call.
"""

from __future__ import annotations

import asyncio

import pytest

from service.client import TranscriptionClient
from service.errors import ServiceUnavailable
from tests.servers import client_settings, make_wav_bytes


def transcribe(server, **overrides):
    async def call():
        async with TranscriptionClient(*client_settings(server, **overrides)) as client:
            return await client.transcribe(make_wav_bytes(seconds=0.5), language="en-IN")

    return asyncio.run(call())


@pytest.mark.parametrize(
    ("script", "statuses"),
    [
        (("429", "500", "ok"), [429, 500, 200]),
        (("503", "503", "500", "ok"), [503, 503, 500, 200]),
        (("500", "429", "ok"), [500, 429, 200]),
    ],
    ids=["429-then-500-then-ok", "503-twice-then-500-then-ok", "500-then-429-then-ok"],
)
def test_other_failures_do_not_use_up_the_500_budget(devserver_factory, script, statuses) -> None:
    server = devserver_factory(fault_script=script, retry_after_s=0)

    result = transcribe(server, max_attempts=5)

    assert server.ledger.statuses() == statuses
    assert result.attempts == len(statuses)


def test_a_second_500_ends_the_call(devserver_factory) -> None:
    server = devserver_factory(fault_script=("500", "429", "500", "ok"), retry_after_s=0)

    with pytest.raises(ServiceUnavailable) as caught:
        transcribe(server, max_attempts=5)

    assert caught.value.status == 500
    assert server.ledger.statuses() == [500, 429, 500]


def test_the_overall_budget_still_bounds_the_call(devserver_factory) -> None:
    server = devserver_factory(fault_script=("429", "503", "500"), retry_after_s=0)

    with pytest.raises(ServiceUnavailable):
        transcribe(server, max_attempts=3)

    assert server.ledger.statuses() == [429, 503, 500]
