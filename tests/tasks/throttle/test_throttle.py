"""The issue's night in small: a service that takes 2 requests at once, medasr set to 8.

Real devserver (--capacity over real sockets), real SQLite, real decoding. Before the
adaptive window, 8 requests went out at once, 6 came back 429, and each 429 used an
attempt: with max_attempts=2 files failed "throttled".
"""

from __future__ import annotations

from pathlib import Path

import pytest
import soundfile

from devserver.tone import encode_tone_dictation
from tasks.throttle.gate import RequestGate
from tests.helpers.transcription import run_once

FILES = 10  # run_once claims one batch of 10
CAPACITY = 2
CEILING = 8


@pytest.fixture
def backlog(tmp_path: Path) -> Path:
    folder = tmp_path / "night"
    folder.mkdir()
    for index in range(FILES):
        text = f"note {index}. pulse regular."
        samples = encode_tone_dictation(text)
        soundfile.write(folder / f"n{index:02d}.wav", samples, 16000, subtype="PCM_16")
    return folder


def test_throttling_fails_no_file_and_the_window_learns_the_capacity(
    devserver_factory, store, backlog
) -> None:
    server = devserver_factory(capacity=CAPACITY, latency_ms=150, retry_after_s=1)
    gate = RequestGate(concurrency=CEILING)

    outcomes = run_once(store, server, backlog, gate=gate, service={"max_attempts": 2})

    assert sorted(o.outcome for o in outcomes) == ["done"] * FILES
    entries = server.ledger.entries()
    throttled = [e for e in entries if e.status == 429]
    # At most the first burst beyond the capacity; after it the window holds 2.
    assert len(throttled) <= CEILING - CAPACITY
    assert gate.window.limit == CAPACITY
    assert [c.reason for c in gate.window.changes][:1] == ["throttled"]


def test_a_retry_after_pauses_every_sender_not_only_the_throttled_one(
    devserver_factory, store, backlog
) -> None:
    server = devserver_factory(capacity=CAPACITY, latency_ms=150, retry_after_s=1)

    outcomes = run_once(store, server, backlog, gate=RequestGate(concurrency=CEILING))

    assert sorted(o.outcome for o in outcomes) == ["done"] * FILES
    entries = server.ledger.entries()
    first_429 = min(e.time for e in entries if e.status == 429)
    # Requests already on their way may land just after it; then nobody sends for 1 s.
    quiet = [e for e in entries if first_429 + 0.15 < e.time < first_429 + 0.95]
    assert quiet == []
    assert max(e.time for e in entries) > first_429 + 1.0  # and sending resumed
