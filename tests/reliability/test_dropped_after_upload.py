"""The service reads a whole upload, then drops the connection without answering.

It may have transcribed (and billed) the audio: the failure recorded must not say the
service was never reached, which would tell the operator nothing was sent.
"""

from __future__ import annotations

from pathlib import Path

from tests.reliability.canned_peer import canned_peer
from tests.reliability.corpus import age_files, write_tone_corpus
from tests.reliability.evidence import items

ATTEMPTS = 2


def test_a_connection_dropped_after_the_upload_is_not_called_unreached(
    tmp_path: Path, tone_devserver, medasr_for, prefect_api
) -> None:
    write_tone_corpus(tmp_path / "corpus", 1, seed=10)
    age_files(tmp_path / "corpus")
    database_url = f"sqlite:///{tmp_path / 'medasr.db'}"
    with canned_peer(b"") as peer:
        medasr = medasr_for(
            tone_devserver(),
            database_url,
            MEDASR_BASE_URL=peer.url,
            MEDASR_MAX_ATTEMPTS=str(ATTEMPTS),
            **prefect_api,
        )
        ended = medasr.run("run", str(tmp_path / "corpus"), "--language", "en-IN")

    assert ended.returncode == 1, ended.describe()
    assert len(peer.requests) == ATTEMPTS  # transient: retried within the budget
    [row] = items(database_url)
    assert (row["status"], row["error_kind"]) == ("failed", "service_unavailable")
    assert "could not reach" not in row["error_message"], row["error_message"]
    assert "may have" in row["error_message"], row["error_message"]
