"""Retry-After is honoured (seconds and HTTP-date), and retries stay inside their budgets."""

from __future__ import annotations

import asyncio
import email.utils

import httpx
import pytest
from pydantic import SecretStr

from service.client import RetryEvent, TranscriptionClient
from service.errors import ServiceUnavailable, Throttled
from service.fhir_client import FhirClient
from service.status import parse_retry_after
from tests.helpers.virtual_clock import VirtualClock
from tests.servers import client_settings, make_wav_bytes

WAV = make_wav_bytes(seconds=0.25)


def _transcribe(
    server, events: list[RetryEvent], *, clock: VirtualClock | None = None, **overrides
) -> int:
    """Attempts of one call; on `clock` (virtual time: nothing waits) when one is given."""
    service, encryption = client_settings(server, **overrides)
    clock = clock or VirtualClock(attempt_s=0.0)

    async def call() -> int:
        async with (
            clock.session(service) as session,
            TranscriptionClient(
                service, encryption, on_retry=events.append, session=session
            ) as client,
        ):
            return (await client.transcribe(WAV, language="en-US")).attempts

    return asyncio.run(call())


@pytest.mark.parametrize("http_date", [False, True], ids=["delay-seconds", "http-date"])
def test_429_waits_at_least_retry_after(devserver_factory, http_date: bool) -> None:
    server = devserver_factory(
        fault_script=("429", "ok"), retry_after_s=1, retry_after_http_date=http_date
    )
    events: list[RetryEvent] = []
    clock = VirtualClock(attempt_s=0.0)
    assert _transcribe(server, events, clock=clock) == 2
    first, second = server.ledger.entries()
    assert (first.status, first.retry_after_s, second.status) == (429, 1.0, 200)
    # The retry waited no less than allowed: the wait asked for is the server's.
    assert clock.waits_s == [event.wait_s for event in events]
    [event] = events
    assert (event.attempt, event.error_kind, event.status) == (1, "throttled", 429)
    # Backoff alone is at most 0.05 s here: the wait is the server's, not ours.
    assert event.wait_s >= (1.0 if not http_date else 0.5)


def test_retry_after_beyond_the_total_budget_gives_up_at_once(devserver_factory) -> None:
    server = devserver_factory(rate_429=1.0, retry_after_s=30)
    events: list[RetryEvent] = []
    clock = VirtualClock(attempt_s=0.0)
    with pytest.raises(Throttled, match=r"retry after 30\.0 s") as caught:
        _transcribe(server, events, clock=clock, retry_max_total_s=5.0, max_attempts=5)
    assert clock.waits_s == []  # gave up at once
    assert caught.value.retry_after_s == 30.0
    assert events == []
    assert len(server.ledger) == 1


def test_total_budget_bounds_many_quick_failures(devserver_factory) -> None:
    server = devserver_factory(rate_503=1.0)
    events: list[RetryEvent] = []
    clock = VirtualClock(attempt_s=0.1)  # each request takes 0.1 s of the budget
    with pytest.raises(ServiceUnavailable):
        _transcribe(server, events, clock=clock, max_attempts=50, retry_max_total_s=0.5)
    assert clock.now_s <= 0.5  # attempts and waits together
    assert 2 <= len(server.ledger) <= 6  # ~0.1 s per request inside a 0.5 s budget


def test_backoff_grows_and_stays_under_its_cap(devserver_factory) -> None:
    server = devserver_factory(rate_503=1.0)
    events: list[RetryEvent] = []
    with pytest.raises(ServiceUnavailable):
        _transcribe(
            server,
            events,
            max_attempts=12,
            retry_initial_backoff_s=0.001,
            retry_max_backoff_s=0.02,
        )
    waits = [e.wait_s for e in events]
    assert len(waits) == 11
    assert all(0 <= w <= 0.02 for w in waits)
    assert len(set(waits)) > 5  # jittered, not a fixed ladder


def test_503_with_retry_after_is_honoured_too(devserver) -> None:
    calls: list[float] = []
    clock = VirtualClock(attempt_s=0.0)

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(clock.monotonic_s())
        if len(calls) == 1:
            return httpx.Response(503, headers={"Retry-After": "1"}, json={"message": "busy"})
        return httpx.Response(200, json={"text": "ok"})

    service, encryption = client_settings(devserver)
    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    client = TranscriptionClient(service, encryption, session=clock.session(service, http=http))
    result = asyncio.run(client.transcribe(WAV, language="en-IN"))
    assert result.attempts == 2
    assert calls[1] - calls[0] >= 1.0


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("3", 3.0),
        (" 0 ", 0.0),
        ("1.5", 1.5),
        ("-5", 0.0),
        ("", None),
        (None, None),
        ("soon", None),
        ("inf", None),
        ("nan", None),
        ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0),  # in the past: retry now
    ],
    ids=repr,
)
def test_parse_retry_after(value, expected) -> None:
    assert parse_retry_after(value) == expected


def test_parse_retry_after_http_date_in_the_future() -> None:
    now_s = 1_700_000_000.0
    value = email.utils.formatdate(now_s + 42, usegmt=True)
    assert parse_retry_after(value, now_s=now_s) == pytest.approx(42.0)


def test_a_429_asking_for_no_wait_is_paced_by_backoff_not_resent_at_once(
    devserver_factory,
) -> None:
    # A throttling receiver answering `Retry-After: 0` every time would take thousands of
    # back-to-back requests for one document inside the budget.
    server = devserver_factory(rate_429=1.0, retry_after_s=0)
    service, _ = client_settings(
        server,
        enabled=False,
        retry_initial_backoff_s=0.5,
        retry_max_backoff_s=1.0,
        retry_max_total_s=3.0,
    )
    clock = VirtualClock(attempt_s=0.01)

    async def create() -> None:
        async with (
            clock.session(service) as session,
            FhirClient(
                service,
                base_url=f"{server.url}/fhir",
                token=SecretStr(server.token),
                session=session,
            ) as client,
        ):
            await client.create(b"{}", if_none_exist="identifier=urn:ietf:rfc:3986|urn:x")

    with pytest.raises(Throttled):
        asyncio.run(create())
    assert clock.waits_s
    assert all(wait > 0 for wait in clock.waits_s)
    assert len(server.ledger) <= 30  # ~0.5 s apart inside 3 s, not one every 10 ms
