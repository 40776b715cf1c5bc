"""DESIGN.md §3 rows played by the devserver's 502, 504, badjson and notext faults, over sockets."""

from __future__ import annotations

import pytest

from service.client import RetryEvent
from service.errors import InvalidResponse, ServiceUnavailable
from tests.servers import DEVSERVER_JWE_KEY, make_wav_bytes
from tests.service.client_call import transcribe

WAV = make_wav_bytes(seconds=0.3)


@pytest.mark.parametrize("status", [502, 504])
def test_gateway_errors_are_retried_then_succeed(devserver_factory, status: int) -> None:
    server = devserver_factory(fault_script=(str(status), str(status), "ok"))
    events: list[RetryEvent] = []
    result = transcribe(server, WAV, events=events, max_attempts=4)
    assert result.attempts == 3
    assert server.ledger.statuses() == [status, status, 200]
    assert [e.status for e in events] == [status, status]


@pytest.mark.parametrize("status", [502, 504])
def test_gateway_errors_use_the_full_budget_then_fail(devserver_factory, status: int) -> None:
    server = devserver_factory(**{f"rate_{status}": 1.0})
    events: list[RetryEvent] = []
    with pytest.raises(ServiceUnavailable) as caught:
        transcribe(server, WAV, events=events, max_attempts=4)
    assert (caught.value.status, caught.value.transient) == (status, True)
    assert f"HTTP {status}" in str(caught.value)
    assert server.ledger.statuses() == [status] * 4  # max_attempts, not the small 500 budget


@pytest.mark.parametrize(
    ("fault", "encrypted", "match"),
    [
        ("badjson", False, "not JSON"),
        ("badjson", True, "not JSON"),
        ("notext", False, "without a 'text' string"),
        ("notext", True, "without a 'text' string"),
    ],
    ids=["badjson", "badjson-encrypted", "notext", "notext-encrypted"],
)
def test_200_without_a_transcript_is_invalid_and_not_retried(
    devserver_factory, fault: str, encrypted: bool, match: str
) -> None:
    key = {"jwe_key": DEVSERVER_JWE_KEY} if encrypted else {}
    server = devserver_factory(**{f"rate_{fault}": 1.0}, **key)
    events: list[RetryEvent] = []
    with pytest.raises(InvalidResponse, match=match) as caught:
        transcribe(server, WAV, events=events, max_attempts=4)
    assert (caught.value.status, caught.value.transient) == (200, False)
    assert events == []
    [entry] = server.ledger.entries()
    assert (entry.status, entry.fault, entry.encrypted) == (200, fault, encrypted)
