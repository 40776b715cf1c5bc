"""An answer whose JSON holds a lone surrogate escape (`\\ud800`): valid JSON, but no
UTF-8 string. The store could not encode it: the paid answer was lost to an internal
error with a traceback in the log. It is read as U+FFFD, and the recording is done.
"""

from __future__ import annotations

from pathlib import Path

from tests.reliability.canned_peer import canned_peer, http_answer
from tests.reliability.corpus import age_files, write_tone_corpus
from tests.reliability.evidence import chunks, items

BODY = b'{"text": "chest \\ud800 clear", "txn_id": "t\\udfff1"}'


def test_a_lone_surrogate_in_the_answer_is_stored_as_a_replacement_character(
    tmp_path: Path, tone_devserver, medasr_for, prefect_api
) -> None:
    write_tone_corpus(tmp_path / "corpus", 1, seed=12)
    age_files(tmp_path / "corpus")
    database_url = f"sqlite:///{tmp_path / 'medasr.db'}"
    with canned_peer(http_answer("200 OK", BODY)) as peer:
        medasr = medasr_for(tone_devserver(), database_url, MEDASR_BASE_URL=peer.url, **prefect_api)
        ended = medasr.run("run", str(tmp_path / "corpus"), "--language", "en-IN")

    assert "Traceback" not in ended.output, ended.describe()
    [row] = items(database_url)
    assert (row["status"], row["error_kind"]) == ("done", None), ended.describe()
    assert row["text"] == "chest \ufffd clear"
    [chunk] = chunks(database_url)
    assert chunk["txn_id"] == "t\ufffd1"
    assert len(peer.requests) == 1
