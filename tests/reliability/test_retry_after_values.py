"""Retry-After values a misbehaving peer may send, through `medasr run` over a socket.

Whatever the value (a 309-digit number, garbage), the run ends, every recording is a
failed row saying it was throttled, and the message stays one a person can read.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.reliability.canned_peer import canned_peer, http_answer
from tests.reliability.corpus import age_files, write_tone_corpus
from tests.reliability.evidence import items

FILES = 2


@pytest.mark.parametrize("retry_after", ["1e308", "9" * 40], ids=["float-max", "40-digits"])
def test_a_huge_retry_after_ends_the_run_with_readable_rows(
    tmp_path: Path, tone_devserver, medasr_for, prefect_api, retry_after: str
) -> None:
    write_tone_corpus(tmp_path / "corpus", FILES, seed=9)
    age_files(tmp_path / "corpus")
    database_url = f"sqlite:///{tmp_path / 'medasr.db'}"
    throttled = http_answer("429 Too Many Requests", b"{}", {"retry-after": retry_after})
    with canned_peer(throttled) as peer:
        medasr = medasr_for(tone_devserver(), database_url, MEDASR_BASE_URL=peer.url, **prefect_api)
        ended = medasr.run("run", str(tmp_path / "corpus"), "--language", "en-IN", timeout_s=180)

    assert ended.returncode == 1, ended.describe()
    rows = items(database_url)
    assert [(r["status"], r["error_kind"]) for r in rows] == [("failed", "throttled")] * FILES
    for row in rows:
        assert re.search(r"\d{12}", row["error_message"]) is None, row["error_message"]
    assert re.search(r"\d{12}", ended.output) is None, ended.describe()
