"""An answer whose text (or an extra field) holds a NUL character (JSON `\\u0000`).

PostgreSQL refuses NUL in text and JSON columns: the answer, paid for, was thrown away
and the recording failed as `store_failed`, to be paid again by every rerun. A NUL
carries nothing in a transcript: it is dropped where the answer is read, so the
recording is done with the one request it cost.
"""

from __future__ import annotations

import json

import pytest

from tests.reliability.canned_peer import http_answer
from tests.reliability.evidence import chunks, items


@pytest.mark.postgres
def test_a_nul_in_the_answer_is_dropped_and_the_recording_done_once(
    fresh_postgres_url: str, run_against_peer
) -> None:
    said = {"text": "chest clear\u0000 stable", "txn_id": "t\u00001", "words": [{"w": "\u0000"}]}
    row, requests = _done_once(run_against_peer, json.dumps(said).encode(), fresh_postgres_url, 11)

    assert row["text"] == "chest clear stable"
    [chunk] = chunks(fresh_postgres_url)
    assert chunk["txn_id"] == "t1"
    assert requests == 1


@pytest.mark.postgres
def test_nan_and_infinity_in_the_extras_are_stored_as_null(
    fresh_postgres_url: str, run_against_peer
) -> None:
    # Python's JSON reader takes these non-standard tokens; PostgreSQL's JSON does not.
    body = b'{"text": "chest clear", "audio_duration": NaN, "confidence": [Infinity, -Infinity]}'
    row, requests = _done_once(run_against_peer, body, fresh_postgres_url, 13)

    assert row["text"] == "chest clear"
    assert requests == 1


def _done_once(run_against_peer, body: bytes, url: str, seed: int) -> tuple[dict, int]:
    """One run against a peer answering `body` (200) on PostgreSQL at `url`: the
    recording's row, which must be done, and the requests the peer had."""
    done = run_against_peer(http_answer("200 OK", body), seed=seed, database_url=url)
    [row] = items(url)
    assert (row["status"], row["error_kind"]) == ("done", None), done.ended.describe()
    return row, done.requests
