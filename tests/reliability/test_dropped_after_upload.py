"""The service reads a whole upload, then drops the connection without answering.

It may have transcribed (and billed) the audio: the failure recorded must not say the
service was never reached, which would tell the operator nothing was sent.
"""

from __future__ import annotations

from tests.reliability.evidence import items

ATTEMPTS = 2


def test_a_connection_dropped_after_the_upload_is_not_called_unreached(run_against_peer) -> None:
    done = run_against_peer(b"", seed=10, MEDASR_MAX_ATTEMPTS=str(ATTEMPTS))

    assert done.ended.returncode == 1, done.ended.describe()
    assert done.requests == ATTEMPTS  # transient: retried within the budget
    [row] = items(done.database_url)
    assert (row["status"], row["error_kind"]) == ("failed", "service_unavailable")
    assert "could not reach" not in row["error_message"], row["error_message"]
    assert "may have" in row["error_message"], row["error_message"]
