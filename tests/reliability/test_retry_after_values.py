"""Retry-After values a misbehaving peer may send, through `medasr run` over a socket.

Whatever the value (a 309-digit number, garbage), the run ends, every recording is a
failed row saying it was throttled, and the message stays one a person can read.
"""

from __future__ import annotations

import re

import pytest

from tests.reliability.canned_peer import http_answer
from tests.reliability.evidence import items

FILES = 2
BUDGET_S = 3


@pytest.mark.parametrize("retry_after", ["1e308", "9" * 40], ids=["float-max", "40-digits"])
def test_a_huge_retry_after_ends_the_run_with_readable_rows(
    run_against_peer, retry_after: str
) -> None:
    throttled = http_answer("429 Too Many Requests", b"{}", {"retry-after": retry_after})
    done = run_against_peer(throttled, seed=9, files=FILES, timeout_s=180)
    ended, database_url = done.ended, done.database_url

    assert ended.returncode == 1, ended.describe()
    rows = items(database_url)
    assert [(r["status"], r["error_kind"]) for r in rows] == [("failed", "throttled")] * FILES
    for row in rows:
        assert re.search(r"\d{12}", row["error_message"]) is None, row["error_message"]
    assert re.search(r"\d{12}", ended.output) is None, ended.describe()


@pytest.mark.parametrize(
    "retry_after", ["0", "-5", "Thu, 01 Jan 1970 00:00:00 GMT"], ids=["zero", "negative", "past"]
)
def test_a_retry_after_of_now_is_paced_by_the_backoff(run_against_peer, retry_after: str) -> None:
    # "Now" is no pace: waiting exactly that long sent a request per round trip, thousands
    # a second, for the whole budget. The backoff (0.05 s doubling to 0.5 s) paces them.
    throttled = http_answer("429 Too Many Requests", b"{}", {"retry-after": retry_after})
    done = run_against_peer(throttled, seed=15, MEDASR_SERVICE__RETRY_MAX_TOTAL_S=str(BUDGET_S))
    ended, database_url = done.ended, done.database_url

    assert ended.returncode == 1, ended.describe()
    [row] = items(database_url)
    # Throttled, or the budget's last tenth of a second ran out on a busy host.
    assert (row["status"], row["retryable"]) == ("failed", 1), row
    # Full jitter under a 0.5 s cap waits 0.25 s on average: about 4 a second, not 1,000.
    assert done.requests <= 20 * BUDGET_S, done.requests
