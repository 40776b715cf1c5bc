"""Part 6, encryption end to end: JWE requests and JWE responses through the devserver.

A tampered response (one ciphertext bit flipped by the devserver) is recorded as an
encryption error: the item fails permanently, no chunk and no text are stored.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.reliability.corpus import write_tone_corpus
from tests.reliability.evidence import chunks, items

JWE_KEY = "reliability-k3y!"  # 16 characters
JWE_KID = "reliability-kid"
FILES = 8


@pytest.mark.slow  # the default suite runs an encrypted end-to-end run in test_secrets
@pytest.mark.parametrize(
    "legacy_response_tag",
    [False, True],
    ids=["16-byte-tag-over-protected-header", "32-byte-full-hmac-tag"],
)
def test_encrypted_requests_and_responses_end_to_end(
    tmp_path: Path, tone_devserver, medasr_for, figures, legacy_response_tag: bool
) -> None:
    started = time.monotonic()
    texts = write_tone_corpus(tmp_path / "corpus", FILES, seed=6)
    database_url = f"sqlite:///{tmp_path / 'medasr.db'}"
    server = tone_devserver(
        jwe_key=JWE_KEY, jwe_kid=JWE_KID, legacy_response_tag=legacy_response_tag
    )
    medasr = medasr_for(server, database_url, MEDASR_JWE_KEY=JWE_KEY, MEDASR_JWE_KID=JWE_KID)

    done = medasr.run("run", str(tmp_path / "corpus"), "--language", "en-IN", "--encrypt")

    assert done.returncode == 0, done.describe()
    entries = server.ledger.entries()
    assert len(entries) == FILES
    assert all(e.encrypted and e.status == 200 and e.filename is None for e in entries)
    rows = items(database_url)
    assert {r["source_uri"]: r["text"] for r in rows} == {str(p): t for p, t in texts.items()}
    figures(
        f"encryption-{'legacy' if legacy_response_tag else 'standard'}-tag",
        files=FILES,
        faults_injected=0,
        kills=0,
        requests=len(entries),
        encrypted_requests=sum(e.encrypted for e in entries),
        lost=0,
        duplicates=0,
        wall_s=round(time.monotonic() - started, 1),
    )


def test_tampered_response_is_an_encryption_error_never_a_transcript(
    tmp_path: Path, tone_devserver, medasr_for, figures, prefect_api
) -> None:
    started = time.monotonic()
    write_tone_corpus(tmp_path / "corpus", 3, seed=7)
    database_url = f"sqlite:///{tmp_path / 'medasr.db'}"
    server = tone_devserver(jwe_key=JWE_KEY, jwe_kid=JWE_KID, tamper_responses=True)
    medasr = medasr_for(
        server, database_url, MEDASR_JWE_KEY=JWE_KEY, MEDASR_JWE_KID=JWE_KID, **prefect_api
    )

    tampered = medasr.run("run", str(tmp_path / "corpus"), "--language", "en-IN", "--encrypt")

    assert tampered.returncode == 1, tampered.describe()
    rows = items(database_url)
    assert [(r["status"], r["error_kind"], r["retryable"]) for r in rows] == [
        ("failed", "encryption_error", 0)
    ] * 3
    assert all("tag" in r["error_message"].lower() for r in rows), rows
    assert all(r["text"] is None for r in rows)
    assert chunks(database_url) == []
    # Never retried: the same tampering would come back, and each try costs money.
    assert server.ledger.statuses() == [200] * 3
    figures(
        "encryption-tampered",
        files=3,
        faults_injected=3,
        kills=0,
        requests=len(server.ledger),
        accepted_tampered=0,
        wall_s=round(time.monotonic() - started, 1),
    )
