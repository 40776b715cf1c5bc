"""Retry budgets: the small one of HTTP 500, max_attempts, and the total time of a call.

A 500 ("file not passed", which we never do) gets one retry; a 429 or 503 before it must
not use that retry up, while the overall budget (max_attempts) still bounds the call
(429s excepted: throttling costs time, not attempts). retry_max_total_s bounds waits and
attempts together.
"""

from __future__ import annotations

import asyncio
import re

import httpx
import pytest

from service.client import TranscriptionClient
from service.errors import CredentialsRejected, ServiceUnavailable, Throttled
from tests.helpers.virtual_clock import VirtualClock
from tests.servers import client_settings, make_wav_bytes
from tests.service.client_call import transcribe


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


def test_the_overall_budget_still_bounds_the_call_but_429s_use_none(devserver_factory) -> None:
    server = devserver_factory(fault_script=("429", "503", "429", "500", "504"), retry_after_s=0)

    with pytest.raises(ServiceUnavailable) as caught:
        transcribe(server, max_attempts=3)

    assert caught.value.status == 504
    assert server.ledger.statuses() == [429, 503, 429, 500, 504]


# -- the total time budget covers the attempts, not only the waits -----------------------


def test_total_time_stays_within_retry_max_total_s(devserver) -> None:
    """Each attempt gets min(request timeout, what is left), so a late one is cut short."""
    seen: list[int] = []

    async def never_answers(request: httpx.Request) -> httpx.Response:
        seen.append(len(seen) + 1)
        raise httpx.ReadTimeout("no answer", request=request)  # after its whole timeout

    service, encryption = client_settings(
        devserver, request_timeout_s=1.0, retry_max_total_s=1.5, max_attempts=5
    )
    clock = VirtualClock()  # each attempt takes its whole timeout; nothing really waits

    async def call() -> None:
        transport = httpx.MockTransport(never_answers)
        async with httpx.AsyncClient(transport=transport) as http:
            session = clock.session(service, http=http)
            client = TranscriptionClient(service, encryption, session=session)
            await client.transcribe(make_wav_bytes(seconds=0.2), language="en-IN")

    with pytest.raises(ServiceUnavailable, match="did not answer within") as caught:
        asyncio.run(call())
    # Before: 1.0 s + a 1.0 s second attempt = 2.0 s. Now the second gets the 0.5 s left.
    assert clock.now_s <= 1.5  # attempts and waits together stay within the budget
    assert len(seen) == 2
    first_s, second_s = clock.timeouts_s
    assert first_s == 1.0
    assert second_s == pytest.approx(1.5 - 1.0 - sum(clock.waits_s))  # the rest, not 1 s
    last_timeout = re.search(r"within ([0-9.]+) s", str(caught.value))
    assert last_timeout is not None
    assert 0.3 < float(last_timeout.group(1)) < 0.51  # the rest of the budget, not 1 s


def test_no_attempt_starts_when_the_wait_would_spend_the_budget(devserver) -> None:
    calls: list[int] = []

    def throttled(request: httpx.Request) -> httpx.Response:
        calls.append(len(calls) + 1)
        return httpx.Response(429, headers={"Retry-After": "2"}, json={"message": "slow down"})

    service, encryption = client_settings(devserver, retry_max_total_s=1.0, max_attempts=5)
    clock = VirtualClock(attempt_s=0.0)

    async def call() -> None:
        transport = httpx.MockTransport(throttled)
        async with httpx.AsyncClient(transport=transport) as http:
            session = clock.session(service, http=http)
            client = TranscriptionClient(service, encryption, session=session)
            await client.transcribe(make_wav_bytes(seconds=0.2), language="en-IN")

    with pytest.raises(Throttled):
        asyncio.run(call())
    assert clock.waits_s == []  # gave up at once instead of waiting 2 s
    assert len(calls) == 1


def test_before_attempt_runs_before_every_attempt_retries_included(devserver_factory) -> None:
    server = devserver_factory(fault_script=("503", "429", "ok"), retry_after_s=0)
    seen_by_server: list[int] = []

    async def before_attempt() -> None:
        seen_by_server.append(len(server.ledger.statuses()))

    async def call():
        async with TranscriptionClient(*client_settings(server, max_attempts=5)) as client:
            return await client.transcribe(
                make_wav_bytes(seconds=0.5), language="en-IN", before_attempt=before_attempt
            )

    asyncio.run(call())

    # The hook ran three times, each time before the server saw that attempt.
    assert seen_by_server == [0, 1, 2]


def test_an_error_raised_by_before_attempt_stops_the_call_unretried(devserver_factory) -> None:
    server = devserver_factory(fault_script=("503", "ok"), retry_after_s=0)
    calls = 0

    async def before_attempt() -> None:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise CredentialsRejected("the run stopped: set MEDASR_TOKEN")

    async def call():
        async with TranscriptionClient(*client_settings(server, max_attempts=5)) as client:
            return await client.transcribe(
                make_wav_bytes(seconds=0.5), language="en-IN", before_attempt=before_attempt
            )

    with pytest.raises(CredentialsRejected):
        asyncio.run(call())
    assert server.ledger.statuses() == [503]


def test_waiting_for_the_rate_cap_does_not_use_up_the_retry_budget(devserver_factory) -> None:
    server = devserver_factory(fault_script=("503", "ok"), retry_after_s=0)
    clock = VirtualClock(attempt_s=0.0)

    async def slow_pacing() -> None:
        clock.now_s += 0.6  # our own rate cap holding the attempt back

    async def call():
        service, encryption = client_settings(server, max_attempts=5, retry_max_total_s=1.0)
        async with (
            clock.session(service) as session,
            TranscriptionClient(service, encryption, session=session) as client,
        ):
            return await client.transcribe(
                make_wav_bytes(seconds=0.5), language="en-IN", before_attempt=slow_pacing
            )

    # 1.2 s of pacing against a 1 s budget: only the service's time may count.
    result = asyncio.run(call())

    assert result.attempts == 2
    assert server.ledger.statuses() == [503, 200]
