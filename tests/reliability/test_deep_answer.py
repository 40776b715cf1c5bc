"""An answer nested deeper than any reader goes (a JSON array 100,000 levels deep).

It was an "unexpected internal error (RecursionError)" with a traceback in the log; it
is an invalid answer, recorded as such, like any other 200 medasr cannot read.
"""

from __future__ import annotations

from pathlib import Path

from tests.reliability.canned_peer import canned_peer, http_answer
from tests.reliability.corpus import age_files, write_tone_corpus
from tests.reliability.evidence import items

DEPTH = 100_000


def test_an_answer_nested_too_deep_is_an_invalid_response(
    tmp_path: Path, tone_devserver, medasr_for, prefect_api
) -> None:
    write_tone_corpus(tmp_path / "corpus", 1, seed=14)
    age_files(tmp_path / "corpus")
    database_url = f"sqlite:///{tmp_path / 'medasr.db'}"
    body = b'{"text": "chest clear", "x": ' + b"[" * DEPTH + b"]" * DEPTH + b"}"
    with canned_peer(http_answer("200 OK", body)) as peer:
        medasr = medasr_for(tone_devserver(), database_url, MEDASR_BASE_URL=peer.url, **prefect_api)
        ended = medasr.run("run", str(tmp_path / "corpus"), "--language", "en-IN")

    assert ended.returncode == 1, ended.describe()
    assert "Traceback" not in ended.output, ended.describe()
    [row] = items(database_url)
    assert (row["status"], row["error_kind"]) == ("failed", "invalid_response"), row
    assert "HTTP 200" in row["error_message"]
    assert len(peer.requests) == 1
