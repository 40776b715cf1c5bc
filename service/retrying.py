"""When a service call tries again: full-jitter backoff, Retry-After, and three budgets.

The budgets (docs/service-contract.md): a small one for HTTP 500 ("file not passed", which we never
do), `max_attempts` for every other failure except throttling (a 429 costs time, never an
attempt), and the call's total time, waits and attempts together. tenacity runs the loop;
this module only says when to stop and how long to wait.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field

import httpx
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception
from tenacity.wait import wait_random_exponential

from config.settings import ServiceSettings
from service.errors import AnswerTooLarge, InvalidResponse, ServiceUnavailable, Throttled

logger = logging.getLogger(__name__)

# A 500 means "file not passed" in the spec; we always pass one, so it is a server fault,
# but one that rarely heals on its own: give it a smaller budget.
_SERVER_FAULT_MAX_ATTEMPTS = 2
_FULL_BUDGET_STATUSES = frozenset({429, 502, 503, 504})
# An attempt with less time left than this could only time out.
_LEAST_ATTEMPT_S = 0.1
# Exchanges that failed before a byte could reach the receiver.
NEVER_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
# A gateway's answer: the receiver behind it may have acted on the request.
_GATEWAY_STATUSES = frozenset({502, 504})


def may_have_arrived(exc: BaseException) -> bool:
    """The request may have reached the receiver and what it did is unknown."""
    if isinstance(exc, AnswerTooLarge):  # accepted, its answer unread: whatever it did stands
        return True
    if isinstance(exc, InvalidResponse) and exc.status is not None and 200 <= exc.status < 300:
        return True  # accepted, its answer unreadable (a proxy's page): the same
    if not isinstance(exc, ServiceUnavailable):
        return False
    if exc.status is not None:
        return exc.status in _GATEWAY_STATUSES
    cause = exc.__cause__
    lost_on_the_way = isinstance(cause, httpx.TransportError | TimeoutError)
    return lost_on_the_way and not isinstance(cause, NEVER_SENT)


@dataclass(frozen=True)
class RetryPolicy:
    """How long one attempt may take and how many, how long, how far apart (seconds)."""

    request_timeout_s: float
    max_attempts: int
    total_s: float
    initial_backoff_s: float
    max_backoff_s: float

    @classmethod
    def of(cls, service: ServiceSettings) -> RetryPolicy:
        """The policy of the MEDASR_* service settings."""
        return cls(
            request_timeout_s=service.request_timeout_s,
            max_attempts=service.max_attempts,
            total_s=service.retry_max_total_s,
            initial_backoff_s=service.retry_initial_backoff_s,
            max_backoff_s=service.retry_max_backoff_s,
        )


@dataclass(frozen=True)
class RetryEvent:
    """One retry about to happen; passed to on_retry. No secrets, no text."""

    attempt: int  # the attempt that failed (1-based)
    wait_s: float  # how long we wait before the next one
    error_kind: str
    status: int | None


@dataclass(frozen=True)
class Clock:
    """The time a call's budget is read on, how it waits between attempts, and how one
    attempt is bounded: the system's by default; a test gives virtual time instead."""

    monotonic_s: Callable[[], float] = time.monotonic
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    timeout: Callable[[float], AbstractAsyncContextManager[object]] = asyncio.timeout


SYSTEM_CLOCK = Clock()


@dataclass
class Deadline:
    """When a call's retry budget runs out (seconds on its clock); moved by pacing."""

    at_s: float
    clock: Clock = field(default=SYSTEM_CLOCK)

    @classmethod
    def after(cls, budget_s: float, *, clock: Clock = SYSTEM_CLOCK) -> Deadline:
        """The deadline `budget_s` seconds from now."""
        return cls(clock.monotonic_s() + budget_s, clock)

    def left_s(self) -> float:
        """Seconds left (negative once past)."""
        return self.at_s - self.clock.monotonic_s()


def retrying(
    policy: RetryPolicy,
    *,
    deadline: Deadline,
    label: str,
    on_retry: Callable[[RetryEvent], None] | None = None,
    resend_unanswered: bool = True,
) -> AsyncRetrying:
    """A tenacity loop for one call: retries ServiceUnavailable within the policy's budgets.

    `resend_unanswered=False` (a receiver that files every copy) retries only what surely
    never arrived: a request that may have reached it is left to the caller to judge.
    """
    backoff = wait_random_exponential(multiplier=policy.initial_backoff_s, max=policy.max_backoff_s)

    def wait_s(state: RetryCallState) -> float:
        return _wait_s(state, backoff=backoff)

    def before_sleep(state: RetryCallState) -> None:
        _announce_retry(state, label=label, on_retry=on_retry)

    return AsyncRetrying(
        retry=retry_if_exception(
            lambda exc: (
                isinstance(exc, ServiceUnavailable)
                and (resend_unanswered or not may_have_arrived(exc))
            )
        ),
        wait=wait_s,
        stop=_CallBudgets(policy, deadline=deadline).spent,
        before_sleep=before_sleep,
        sleep=deadline.clock.sleep,
        reraise=True,
    )


class _CallBudgets:
    """What one call has used of the policy's budgets, failure by failure."""

    def __init__(self, policy: RetryPolicy, *, deadline: Deadline) -> None:
        self.policy = policy
        self.deadline = deadline
        self.server_faults: list[int] = []  # answers that get the small budget
        self.budgeted: list[str] = []  # failures that use an attempt (not 429s)

    def spent(self, state: RetryCallState) -> bool:
        """Count this failure; True when no budget allows another attempt."""
        error = _failure(state)
        status = getattr(error, "status", None)
        if status is not None and status not in _FULL_BUDGET_STATUSES:
            self.server_faults.append(status)
        # Throttling is no fault of the request: while the service keeps answering, a 429
        # costs only time, and the total budget ends it.
        if not isinstance(error, Throttled):
            self.budgeted.append(type(error).__name__)
        return _out_of_budget(
            state,
            policy=self.policy,
            server_faults=self.server_faults,
            budgeted=self.budgeted,
            deadline=self.deadline,
        )


def _wait_s(state: RetryCallState, *, backoff: wait_random_exponential) -> float:
    """Full-jitter backoff, but never shorter than the server's Retry-After."""
    error = _failure(state)
    retry_after_s = getattr(error, "retry_after_s", None)
    if isinstance(error, Throttled) and retry_after_s:
        # The server said when; the limiter paces everyone from then on. "Now" (0, a
        # negative or a past date) says nothing: backoff paces it, not a tight loop.
        return float(retry_after_s)
    return max(backoff(state), retry_after_s or 0.0)


def _out_of_budget(
    state: RetryCallState,
    *,
    policy: RetryPolicy,
    server_faults: list[int],
    budgeted: list[str],
    deadline: Deadline,
) -> bool:
    # The small budget counts 500s only: a 429 or a timeout before one must not use it up.
    if len(server_faults) >= _SERVER_FAULT_MAX_ATTEMPTS:
        return True
    if len(budgeted) >= policy.max_attempts:
        return True
    # Waiting to (almost) the end of the total budget leaves no time for the attempt:
    # give up now with the real error.
    return state.upcoming_sleep + _LEAST_ATTEMPT_S >= deadline.left_s()


def _announce_retry(
    state: RetryCallState, *, label: str, on_retry: Callable[[RetryEvent], None] | None
) -> None:
    error = _failure(state)
    event = RetryEvent(
        attempt=state.attempt_number,
        wait_s=state.upcoming_sleep,
        error_kind=getattr(error, "kind", type(error).__name__),
        status=getattr(error, "status", None),
    )
    logger.debug(
        "%s retry attempt=%d kind=%s status=%s wait_s=%.3f",
        label,
        event.attempt,
        event.error_kind,
        event.status,
        event.wait_s,
    )
    if on_retry is not None:
        on_retry(event)


def _failure(state: RetryCallState) -> BaseException | None:
    return state.outcome.exception() if state.outcome is not None else None
