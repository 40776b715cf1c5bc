"""The devserver's --capacity (in-flight cap) and --rate (token bucket), over real sockets."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from config.errors import ConfigError
from devserver import DevServerConfig
from devserver.capacity import CapacityGuard
from flows.cli.devserver import config_from_options
from tests.servers import DEVSERVER_TOKEN, make_wav_bytes

AUTH = {"Authorization": f"Bearer {DEVSERVER_TOKEN}"}
WAV = make_wav_bytes(seconds=0.2)


async def _post_many(
    url: str, count: int, answered: list[httpx.Response] | None
) -> list[httpx.Response]:
    files = {"file": ("chunk-0001.wav", WAV, "audio/wav")}
    limits = httpx.Limits(max_connections=count)
    async with httpx.AsyncClient(timeout=10, limits=limits) as http:

        async def post() -> httpx.Response:
            response = await http.post(
                f"{url}/voice/get-asr", params={"language": "en-IN"}, headers=AUTH, files=files
            )
            if answered is not None:
                answered.append(response)  # in the order the answers came back
            return response

        return list(await asyncio.gather(*(post() for _ in range(count))))


def post_many(
    server, count: int, *, answered: list[httpx.Response] | None = None
) -> list[httpx.Response]:
    return asyncio.run(_post_many(server.url, count, answered))


def frozen_bucket(server, *, rate_per_s: float) -> list[float]:
    """Give `server` a token bucket read on a clock the test moves (returned, in seconds):
    requests sent together arrive at the same instant however busy the machine is."""
    now = [0.0]
    guard = CapacityGuard(capacity=None, rate_per_s=rate_per_s, clock=lambda: now[0])
    server.state.capacity = guard
    return now


def test_capacity_throttles_requests_beyond_it_on_arrival(devserver_factory) -> None:
    server = devserver_factory(capacity=2, latency_ms=400, retry_after_s=1)
    answered: list[httpx.Response] = []
    responses = post_many(server, 5, answered=answered)
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200, 200, 429, 429, 429]
    throttled = [r for r in responses if r.status_code == 429]
    assert all(r.headers["retry-after"] == "1" for r in throttled)
    # Refused on arrival, not after the latency: every 429 came back before either 200.
    assert [r.status_code for r in answered] == [429, 429, 429, 200, 200]
    entries = server.ledger.entries()
    admitted = [e for e in entries if e.status == 200]
    refused = [e for e in entries if e.status == 429]
    assert max(e.in_flight or 0 for e in admitted) == 2
    assert {(e.fault, e.in_flight) for e in refused} == {("capacity", 2)}
    assert all(e.sha256 is not None for e in refused)  # attempts of a chunk stay linked
    assert server.state.capacity.peak_in_flight == 2
    # Nothing waited for a slot: the two admitted requests were both in flight at once.
    assert sorted(e.in_flight for e in admitted) == [1, 2]


def test_capacity_frees_slots_as_answers_go_out(devserver_factory) -> None:
    server = devserver_factory(capacity=2, latency_ms=50)
    for _ in range(3):
        assert [r.status_code for r in post_many(server, 2)] == [200, 200]
    assert server.state.capacity.peak_in_flight == 2
    assert [e.in_flight for e in server.ledger.entries()].count(None) == 0


def test_rate_is_a_token_bucket_of_one_second(devserver_factory) -> None:
    server = devserver_factory(rate=2.0, retry_after_s=0)
    now = frozen_bucket(server, rate_per_s=server.config.rate)
    statuses = sorted(r.status_code for r in post_many(server, 4))  # arrive at once
    assert statuses == [200, 200, 429, 429]  # the bucket starts full: one second's worth
    assert {e.fault for e in server.ledger.entries() if e.status == 429} == {"rate"}
    now[0] += 0.6  # one token back at 2 per second
    assert post_many(server, 1)[0].status_code == 200
    assert [r.status_code for r in post_many(server, 1)] == [429]  # and only one


def test_without_the_options_nothing_is_throttled(devserver_factory) -> None:
    server = devserver_factory(latency_ms=100)
    assert [r.status_code for r in post_many(server, 12)] == [200] * 12
    assert server.state.capacity.peak_in_flight >= 2  # they did overlap


def test_bucket_refills_at_the_rate_and_holds_at_most_one_second() -> None:
    now = [0.0]
    guard = CapacityGuard(capacity=None, rate_per_s=4.0, clock=lambda: now[0])
    admitted = [guard.admit().refused is None for _ in range(6)]
    assert admitted == [True] * 4 + [False] * 2
    now[0] = 0.5  # two tokens back
    assert [guard.admit().refused for _ in range(3)] == [None, None, "rate"]
    now[0] = 100.0  # a long idle time refills one second's worth, no more
    assert sum(guard.admit().refused is None for _ in range(10)) == 4


def test_slow_rates_keep_a_bucket_of_one_request() -> None:
    now = [0.0]
    guard = CapacityGuard(capacity=None, rate_per_s=0.5, clock=lambda: now[0])
    assert [guard.admit().refused for _ in range(2)] == [None, "rate"]
    now[0] = 1.9
    assert guard.admit().refused == "rate"
    now[0] = 2.0
    assert guard.admit().refused is None


def test_capacity_counts_until_release() -> None:
    guard = CapacityGuard(capacity=1, rate_per_s=None)
    first = guard.admit()
    assert (first.refused, first.in_flight) == (None, 1)
    assert guard.admit() == guard.admit()  # refused ones hold nothing
    assert guard.admit().refused == "capacity"
    guard.release()
    assert guard.admit().refused is None


def test_in_flight_is_the_count_right_now_without_a_cap() -> None:
    guard = CapacityGuard(capacity=None, rate_per_s=None)
    assert guard.in_flight == 0
    guard.admit()
    guard.admit()
    assert guard.in_flight == 2
    guard.release()
    assert (guard.in_flight, guard.peak_in_flight) == (1, 2)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"capacity": 0}, "--capacity must be at least 1"),
        ({"rate": 0.0}, "--rate must be positive"),
    ],
)
def test_bad_capacity_or_rate_is_a_config_error(fields, message) -> None:
    with pytest.raises(ConfigError, match=message):
        DevServerConfig(**fields)


def test_command_line_options_reach_the_config() -> None:
    config = config_from_options(capacity=3, rate=12.5)
    assert (config.capacity, config.rate) == (3, 12.5)
    assert (DevServerConfig().capacity, DevServerConfig().rate) == (None, None)
