"""An answer nested deeper than any reader goes (a JSON array 100,000 levels deep).

It was an "unexpected internal error (RecursionError)" with a traceback in the log; it
is an invalid answer, recorded as such, like any other 200 medasr cannot read.
"""

from __future__ import annotations

from tests.reliability.canned_peer import http_answer
from tests.reliability.evidence import items

DEPTH = 100_000


def test_an_answer_nested_too_deep_is_an_invalid_response(run_against_peer) -> None:
    body = b'{"text": "chest clear", "x": ' + b"[" * DEPTH + b"]" * DEPTH + b"}"
    done = run_against_peer(http_answer("200 OK", body), seed=14)

    assert done.ended.returncode == 1, done.ended.describe()
    assert "Traceback" not in done.ended.output, done.ended.describe()
    [row] = items(done.database_url)
    assert (row["status"], row["error_kind"]) == ("failed", "invalid_response"), row
    assert "HTTP 200" in row["error_message"]
    assert done.requests == 1
