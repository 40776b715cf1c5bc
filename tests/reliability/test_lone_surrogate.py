"""An answer whose JSON holds a lone surrogate escape (`\\ud800`): valid JSON, but no
UTF-8 string. The store could not encode it: the paid answer was lost to an internal
error with a traceback in the log. It is read as U+FFFD, and the recording is done.
"""

from __future__ import annotations

from tests.reliability.canned_peer import http_answer
from tests.reliability.evidence import chunks, items

BODY = b'{"text": "chest \\ud800 clear", "txn_id": "t\\udfff1"}'


def test_a_lone_surrogate_in_the_answer_is_stored_as_a_replacement_character(
    run_against_peer,
) -> None:
    done = run_against_peer(http_answer("200 OK", BODY), seed=12)

    assert "Traceback" not in done.ended.output, done.ended.describe()
    [row] = items(done.database_url)
    assert (row["status"], row["error_kind"]) == ("done", None), done.ended.describe()
    assert row["text"] == "chest \ufffd clear"
    [chunk] = chunks(done.database_url)
    assert chunk["txn_id"] == "t\ufffd1"
    assert done.requests == 1
