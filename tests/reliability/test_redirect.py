"""The service answers with a redirect to another origin: MEDASR_BASE_URL names a door
that moved. Every request would be redirected, so the run stops at the first one (exit
2, like a certificate that does not verify) and leaves its recordings pending for a
rerun with the right URL, instead of uploading each one to fail it for good. The bearer
token never goes to the other origin.
"""

from __future__ import annotations

from tests.reliability.canned_peer import http_answer
from tests.reliability.evidence import items

FILES = 3


def test_a_redirect_stops_the_run_and_leaves_its_recordings_pending(
    tone_devserver, run_against_peer
) -> None:
    elsewhere = tone_devserver()
    moved = http_answer(
        "307 Temporary Redirect", headers={"location": f"{elsewhere.url}/voice/get-asr"}
    )
    done = run_against_peer(moved, seed=6, files=FILES, devserver=elsewhere, MEDASR_CONCURRENCY="1")
    ended = done.ended

    assert ended.returncode == 2, ended.describe()
    assert "Traceback" not in ended.output
    [line] = [line for line in ended.stderr.splitlines() if line.startswith("medasr:")]
    assert "MEDASR_BASE_URL" in line, line
    assert f"(HTTP 307 to {elsewhere.url})" in line, line
    assert done.requests == 1  # stopped at the first: nothing else uploaded
    assert elsewhere.ledger.entries() == []  # not followed: the token stays with its origin
    assert [(r["status"], r["error_kind"]) for r in items(done.database_url)] == [
        ("pending", None)
    ] * FILES
