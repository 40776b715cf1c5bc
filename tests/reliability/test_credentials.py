"""Part 3, expiring credentials: the service starts answering 403 after N requests.

The run stops within concurrency + 1 further requests, exits 3 and marks nothing
failed; a rerun with a good (rotated) token finishes the rest, paying for nothing twice.
"""

from __future__ import annotations

import time
from pathlib import Path

from tests.reliability.corpus import write_tone_corpus
from tests.reliability.evidence import by_sha, items

FILES = 40
ACCEPTED = 12  # requests the devserver accepts before its token "expires"
CONCURRENCY = 4


def test_expired_token_stops_the_run_and_a_good_token_finishes_it(
    tmp_path: Path, tone_devserver, medasr_for, figures, prefect_api
) -> None:
    started = time.monotonic()
    texts = write_tone_corpus(tmp_path / "corpus", FILES, seed=3)
    database_url = f"sqlite:///{tmp_path / 'medasr.db'}"
    expiring = tone_devserver(auth_fail_after=ACCEPTED, latency_ms=100)
    medasr = medasr_for(expiring, database_url, MEDASR_CONCURRENCY=str(CONCURRENCY), **prefect_api)

    stopped = medasr.run("run", str(tmp_path / "corpus"), "--language", "en-IN")

    assert stopped.returncode == 3, stopped.describe()
    assert "credentials" in stopped.stderr.lower()
    assert "MEDASR_TOKEN" in stopped.stderr
    statuses = expiring.ledger.statuses()
    first_403 = statuses.index(403)
    further = len(statuses) - first_403 - 1
    assert further <= CONCURRENCY + 1, statuses
    assert statuses.count(200) == ACCEPTED
    rows = items(database_url)
    by_status = {
        status: [r for r in rows if r["status"] == status] for status in {"done", "pending"}
    }
    assert not [r for r in rows if r["status"] not in ("done", "pending")], rows
    assert len(by_status["done"]) == ACCEPTED
    assert all(r["lease_owner"] is None and r["error_kind"] is None for r in rows)

    rotated = tone_devserver(token="rotated-token")
    rerun = medasr_for(rotated, database_url, MEDASR_CONCURRENCY=str(CONCURRENCY), **prefect_api)
    finished = rerun.run("run", str(tmp_path / "corpus"), "--language", "en-IN")

    assert finished.returncode == 0, finished.describe()
    rows = items(database_url)
    assert {r["source_uri"]: r["text"] for r in rows} == {str(p): t for p, t in texts.items()}
    assert all(r["status"] == "done" for r in rows)
    both = expiring.ledger.entries() + rotated.ledger.entries()
    paid = {sha: [e for _, e in sent if e.status == 200] for sha, sent in by_sha(both).items()}
    assert sorted(len(successes) for successes in paid.values() if successes) == [1] * FILES
    figures(
        "credentials",
        files=FILES,
        faults_injected=statuses.count(403),
        kills=0,
        requests=len(both),
        retries=0,
        further_requests_after_first_403=further,
        exit_codes=[stopped.returncode, finished.returncode],
        lost=FILES - sum(r["status"] == "done" for r in rows),
        duplicates=sum(len(s) - 1 for s in paid.values() if s),
        wall_s=round(time.monotonic() - started, 1),
    )
