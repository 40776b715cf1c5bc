"""A base URL that carries more than scheme, host, port and path is refused before
anything is sent (exit 2, one line naming MEDASR_BASE_URL).

httpx would make each part into something else: `user:password@` replaces the bearer
token with Basic credentials (the service answers 401 and medasr blames the token), and a
`?query` or `#fragment` swallows the endpoint's path, so the audio goes to another door.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.reliability.corpus import age_files, write_tone_corpus
from tests.reliability.evidence import status_counts

SECRET = "pw-in-url-7f3"


@pytest.mark.parametrize(
    "tail",
    [f"//clinic:{SECRET}@", "/api?tenant=7", "/api#main"],
    ids=["userinfo", "query", "fragment"],
)
def test_a_base_url_with_userinfo_query_or_fragment_is_refused_unsent(
    tmp_path: Path, tone_devserver, medasr_for, prefect_api, tail: str
) -> None:
    write_tone_corpus(tmp_path / "corpus", 1, seed=4)
    age_files(tmp_path / "corpus")
    database_url = f"sqlite:///{tmp_path / 'medasr.db'}"
    server = tone_devserver()
    scheme, _, address = server.url.partition("://")
    # A user goes before the host, a query or fragment after the path.
    base_url = f"{scheme}:{tail}{address}" if tail.startswith("//") else server.url + tail
    medasr = medasr_for(server, database_url, MEDASR_BASE_URL=base_url, **prefect_api)

    ended = medasr.run("run", str(tmp_path / "corpus"), "--language", "en-IN")

    assert ended.returncode == 2, ended.describe()
    [line] = [line for line in ended.stderr.splitlines() if line.startswith("medasr:")]
    assert line.startswith("medasr: configuration error: MEDASR_BASE_URL:"), line
    assert "Traceback" not in ended.output
    assert SECRET not in ended.output
    assert server.ledger.entries() == []
    assert status_counts(database_url).get("done", 0) == 0
