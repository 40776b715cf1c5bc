"""The service answers with a redirect to another origin: MEDASR_BASE_URL names a door
that moved. Every request would be redirected, so the run stops at the first one (exit
2, like a certificate that does not verify) and leaves its recordings pending for a
rerun with the right URL, instead of uploading each one to fail it for good. The bearer
token never goes to the other origin.
"""

from __future__ import annotations

from pathlib import Path

from tests.reliability.canned_peer import canned_peer, http_answer
from tests.reliability.corpus import age_files, write_tone_corpus
from tests.reliability.evidence import items

FILES = 3


def test_a_redirect_stops_the_run_and_leaves_its_recordings_pending(
    tmp_path: Path, tone_devserver, medasr_for, prefect_api
) -> None:
    write_tone_corpus(tmp_path / "corpus", FILES, seed=6)
    age_files(tmp_path / "corpus")
    database_url = f"sqlite:///{tmp_path / 'medasr.db'}"
    elsewhere = tone_devserver()
    moved = http_answer(
        "307 Temporary Redirect", headers={"location": f"{elsewhere.url}/voice/get-asr"}
    )
    with canned_peer(moved) as peer:
        medasr = medasr_for(
            elsewhere, database_url, MEDASR_BASE_URL=peer.url, MEDASR_CONCURRENCY="1", **prefect_api
        )
        ended = medasr.run("run", str(tmp_path / "corpus"), "--language", "en-IN")

    assert ended.returncode == 2, ended.describe()
    assert "Traceback" not in ended.output
    [line] = [line for line in ended.stderr.splitlines() if line.startswith("medasr:")]
    assert "MEDASR_BASE_URL" in line, line
    assert f"(HTTP 307 to {elsewhere.url})" in line, line
    assert len(peer.requests) == 1  # stopped at the first: nothing else uploaded
    assert elsewhere.ledger.entries() == []  # not followed: the token stays with its origin
    assert [(r["status"], r["error_kind"]) for r in items(database_url)] == [
        ("pending", None)
    ] * FILES
