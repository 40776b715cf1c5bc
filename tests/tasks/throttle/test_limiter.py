"""The adaptive concurrency limiter: the AIMD rule (plain, deterministic) and its async face."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import deque

import pytest

from service.errors import ServiceUnavailable, Throttled
from tasks.throttle.limiter import FIRST_PROBE_WINDOWS, AdaptiveLimiter, AimdWindow, Ticket


def fill(window: AimdWindow) -> list[Ticket]:
    """Admit until the window is full."""
    tickets = []
    while (ticket := window.admit()) is not None:
        tickets.append(ticket)
    return tickets


def serve_round(window: AimdWindow, *, capacity: int) -> tuple[int, int]:
    """One round trip against a service that takes `capacity` at once: (answered, throttled)."""
    tickets = fill(window)
    for ticket in tickets[:capacity]:
        window.answered(ticket)
    for ticket in tickets[capacity:]:
        window.throttled(ticket)
    return min(len(tickets), capacity), max(0, len(tickets) - capacity)


def serve_steadily(window: AimdWindow, *, capacity: int, answers: int) -> list[int]:
    """A service that takes `capacity` at once and answers in turn, the window refilled
    after each answer: how many clean answers came before each throttle episode."""
    in_flight: deque[tuple[Ticket, bool]] = deque()
    episodes: list[int] = []
    served = 0
    while served < answers:
        while (ticket := window.admit()) is not None:
            in_flight.append((ticket, sum(taken for _, taken in in_flight) < capacity))
        ticket, taken = in_flight.popleft()
        if taken:
            window.answered(ticket)
            served += 1
        elif window.throttled(ticket) and served not in episodes:
            episodes.append(served)
    return episodes


def test_the_window_starts_at_the_ceiling() -> None:
    window = AimdWindow(ceiling=8)
    tickets = fill(window)
    assert len(tickets) == 8 == window.in_flight
    assert [t.others_in_flight for t in tickets] == list(range(8))
    assert [t.full_window for t in tickets] == [False] * 7 + [True]


def test_a_throttle_cuts_to_what_the_service_took_once_per_episode() -> None:
    window = AimdWindow(ceiling=8)
    tickets = fill(window)
    for ticket in tickets[:3]:
        window.answered(ticket)
    assert window.throttled(tickets[3]) is True  # sent with 3 in flight: capacity 3
    assert window.limit == 3
    assert [window.throttled(t) for t in tickets[4:]] == [False] * 4  # the same episode
    assert (window.limit, window.in_flight) == (3, 0)


def test_throttles_of_one_episode_in_any_order_settle_on_the_smallest_level() -> None:
    window = AimdWindow(ceiling=8)
    tickets = fill(window)
    assert window.throttled(tickets[7]) is True  # 7 others: cut to min(7, 6)
    assert window.limit == 6
    assert window.throttled(tickets[5]) is True  # the same episode, but 5 were enough
    assert window.throttled(tickets[2]) is True
    assert window.throttled(tickets[4]) is False
    assert window.limit == 2
    for _ in range(FIRST_PROBE_WINDOWS * 2 - 1):  # 3 was throttled: probe late
        serve_round(window, capacity=2)
    assert window.limit == 2


def test_the_cut_is_multiplicative_when_many_were_in_flight() -> None:
    window = AimdWindow(ceiling=16)
    tickets = fill(window)
    window.throttled(tickets[15])  # 15 others in flight: the service is shared, cut by 0.75
    assert window.limit == 12


def test_the_window_never_closes() -> None:
    window = AimdWindow(ceiling=4)
    for _ in range(5):
        window.throttled(fill(window)[0])  # even the only request in flight was throttled
        for ticket in range(window.in_flight):
            del ticket
        while window.in_flight:
            window.released(Ticket(others_in_flight=0, epoch=-1, full_window=False))
    assert window.limit == 1
    assert window.admit() is not None


def test_clean_answers_grow_one_per_window_only_while_it_is_full() -> None:
    window = AimdWindow(ceiling=8)
    window.throttled(fill(window)[7])  # cut to min(7, 6) = 6, remembered at level 8
    while window.in_flight:
        window.released(Ticket(others_in_flight=0, epoch=-1, full_window=False))
    assert window.limit == 6
    half_full = [window.admit() for _ in range(3)]
    for ticket in half_full:
        assert ticket is not None
        window.answered(ticket)
    assert window.limit == 6  # an idle window proves nothing
    answered, _ = serve_round(window, capacity=8)
    assert (answered, window.limit) == (6, 6)  # only the last place was a full-window answer
    rounds = 0
    while window.limit == 6:
        serve_round(window, capacity=8)
        rounds += 1
    assert window.limit == 7
    assert rounds == 5  # six full-window answers, one per round: +1 per window


def test_probes_next_to_the_throttled_level_are_rare_and_get_rarer() -> None:
    window = AimdWindow(ceiling=8)
    episodes = serve_steadily(window, capacity=3, answers=1500)
    # The first burst, then probes after 32, 64, 128 and 256 windows of 3 clean answers.
    assert len(episodes) == 5
    gaps = [later - earlier for earlier, later in itertools.pairwise(episodes)]
    assert gaps[0] >= FIRST_PROBE_WINDOWS * 3
    assert gaps[1] > 1.8 * gaps[0]
    assert gaps[2] > 1.8 * gaps[1]
    assert window.limit == 3


@pytest.mark.parametrize("capacity", [3, 16])
def test_probes_wait_for_windows_of_answers_whatever_the_capacity(capacity: int) -> None:
    """A failed probe pauses the run for one Retry-After: the same number of windows of
    answers at any capacity, so the wait before the next one is counted in windows too."""
    window = AimdWindow(ceiling=32)
    episodes = serve_steadily(window, capacity=capacity, answers=200 * capacity)
    # The first burst, then probes after 32 and 64 windows (the next one is after 224).
    assert len(episodes) == 3, episodes
    first_gap = episodes[1] - episodes[0]  # with the answers in flight at the cut, not counted
    assert FIRST_PROBE_WINDOWS * capacity <= first_gap <= (FIRST_PROBE_WINDOWS + 2) * capacity
    assert window.limit == capacity


def test_passing_the_throttled_level_forgets_it() -> None:
    window = AimdWindow(ceiling=8)
    serve_round(window, capacity=3)  # throttled at 4
    assert window.limit == 3
    # The service grew: the probe at 4 and the next levels pass, back to +1 per window.
    for _ in range(FIRST_PROBE_WINDOWS * 3 + 4 + 5 + 6 + 7):  # one full-window answer a round
        serve_round(window, capacity=8)
    assert window.limit == 8


def test_a_service_with_room_for_the_ceiling_is_used_fully() -> None:
    window = AimdWindow(ceiling=16)
    results = [serve_round(window, capacity=16) for _ in range(100)]
    assert all(result == (16, 0) for result in results)


def test_answers_to_requests_sent_before_a_cut_do_not_grow_it() -> None:
    window = AimdWindow(ceiling=4)
    tickets = fill(window)
    window.throttled(tickets[3])
    for ticket in tickets[:3]:
        assert window.answered(ticket) is False


def test_released_attempts_neither_cut_nor_grow() -> None:
    window = AimdWindow(ceiling=2)
    for ticket in fill(window):
        window.released(ticket)
    assert (window.limit, window.in_flight) == (2, 0)


def test_a_ceiling_under_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        AimdWindow(ceiling=0)


# -- the async limiter -----------------------------------------------------------------------


async def _hold(limiter: AdaptiveLimiter, seconds: float, starts: list[float]) -> None:
    async with limiter.attempt():
        starts.append(time.monotonic())
        await asyncio.sleep(seconds)


def test_waiters_get_the_place_a_finished_attempt_frees() -> None:
    async def scenario() -> list[float]:
        limiter = AdaptiveLimiter(ceiling=1)
        starts: list[float] = []
        await asyncio.gather(*(_hold(limiter, 0.1, starts) for _ in range(3)))
        return starts

    starts = asyncio.run(scenario())
    assert len(starts) == 3  # every waiter got in, one at a time
    assert all(b - a >= 0.095 for a, b in itertools.pairwise(starts))


def test_retry_after_pauses_new_attempts_of_everyone() -> None:
    async def scenario() -> tuple[float, float, int]:
        limiter = AdaptiveLimiter(ceiling=4)
        with pytest.raises(Throttled):
            async with limiter.attempt():
                raise Throttled("slow down", status=429, retry_after_s=0.4)
        paused_at, limit = time.monotonic(), limiter.limit
        starts: list[float] = []
        await asyncio.gather(*(_hold(limiter, 0.0, starts) for _ in range(3)))
        return paused_at, min(starts), limit

    paused_at, first_start, limit = asyncio.run(scenario())
    assert first_start - paused_at >= 0.38
    assert limit == 1  # nothing else was in flight: the service took none beside it


def test_a_503_cuts_the_window_and_other_errors_do_not() -> None:
    async def scenario() -> list[int]:
        limiter = AdaptiveLimiter(ceiling=8)
        limits = []
        for error in (ServiceUnavailable("reset"), ServiceUnavailable("busy", status=503)):
            async with asyncio.TaskGroup() as group:
                holders = [group.create_task(_hold(limiter, 0.05, [])) for _ in range(4)]
                await asyncio.sleep(0.01)
                with pytest.raises(ServiceUnavailable):
                    async with limiter.attempt():
                        raise error
            del holders
            limits.append(limiter.limit)
        return limits

    assert asyncio.run(scenario()) == [8, 4]  # 503 sent with 4 in flight: min(4, 6)


def test_the_cut_is_logged_with_the_new_limit(caplog) -> None:
    async def scenario() -> None:
        limiter = AdaptiveLimiter(ceiling=8)
        with pytest.raises(Throttled):
            async with limiter.attempt():
                raise Throttled("slow down", status=429, retry_after_s=None)

    with caplog.at_level("INFO", logger="medasr.limiter"):
        asyncio.run(scenario())
    assert "requests in flight now at most 1 (throttled)" in caplog.text
