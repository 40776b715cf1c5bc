"""An answer whose text (or an extra field) holds a NUL character (JSON `\\u0000`).

PostgreSQL refuses NUL in text and JSON columns: the answer, paid for, was thrown away
and the recording failed as `store_failed`, to be paid again by every rerun. A NUL
carries nothing in a transcript: it is dropped where the answer is read, so the
recording is done with the one request it cost.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.reliability.canned_peer import canned_peer, http_answer
from tests.reliability.corpus import age_files, write_tone_corpus
from tests.reliability.evidence import chunks, items


@pytest.mark.postgres
def test_a_nul_in_the_answer_is_dropped_and_the_recording_done_once(
    tmp_path: Path, fresh_postgres_url: str, tone_devserver, medasr_for, prefect_api
) -> None:
    said = {"text": "chest clear\u0000 stable", "txn_id": "t\u00001", "words": [{"w": "\u0000"}]}
    row, requests = _run_once_against(
        json.dumps(said).encode(), tmp_path, fresh_postgres_url, tone_devserver(), medasr_for,
        prefect_api, seed=11,
    )  # fmt: skip

    assert row["text"] == "chest clear stable"
    [chunk] = chunks(fresh_postgres_url)
    assert chunk["txn_id"] == "t1"
    assert requests == 1


@pytest.mark.postgres
def test_nan_and_infinity_in_the_extras_are_stored_as_null(
    tmp_path: Path, fresh_postgres_url: str, tone_devserver, medasr_for, prefect_api
) -> None:
    # Python's JSON reader takes these non-standard tokens; PostgreSQL's JSON does not.
    body = b'{"text": "chest clear", "audio_duration": NaN, "confidence": [Infinity, -Infinity]}'
    row, requests = _run_once_against(
        body, tmp_path, fresh_postgres_url, tone_devserver(), medasr_for, prefect_api, seed=13
    )

    assert row["text"] == "chest clear"
    assert requests == 1


def _run_once_against(
    body: bytes, tmp_path: Path, url: str, devserver, medasr_for, prefect_api, *, seed: int
) -> tuple[dict, int]:
    """`medasr run` over one recording against a peer answering `body` (200) on PostgreSQL
    at `url`: the recording's row, which must be done, and the requests the peer had."""
    write_tone_corpus(tmp_path / "corpus", 1, seed=seed)
    age_files(tmp_path / "corpus")
    with canned_peer(http_answer("200 OK", body)) as peer:
        medasr = medasr_for(devserver, url, MEDASR_BASE_URL=peer.url, **prefect_api)
        assert medasr.run("db", "upgrade").returncode == 0
        ended = medasr.run("run", str(tmp_path / "corpus"), "--language", "en-IN")
    [row] = items(url)
    assert (row["status"], row["error_kind"]) == ("done", None), ended.describe()
    return row, len(peer.requests)
