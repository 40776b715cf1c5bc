"""Issue 12 part 2, throttled: two `medasr run` workers on one PostgreSQL store, and a
service that answers 429 with a Retry-After longer than the lease.

A file waiting out a Retry-After finishes no chunk, so before the lease keeper its lease
lapsed and the other worker's free batch loop claimed it: both sent its chunk, both
paid. Now every held lease is renewed on a timer: no chunk is paid twice, every file
ends done.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest

from tests.reliability.corpus import write_tone_corpus
from tests.reliability.evidence import items
from tests.reliability.harness import run_side_by_side

FILES = 12
LEASE_S = 5  # the shortest lease the setting allows
RETRY_AFTER_S = 8  # longer than the lease


@pytest.mark.slow
@pytest.mark.postgres
def test_two_throttled_workers_pay_no_chunk_twice(
    tmp_path: Path, fresh_postgres_url: str, tone_devserver, medasr_for, figures
) -> None:
    started = time.monotonic()
    corpus = tmp_path / "corpus"
    texts = write_tone_corpus(corpus, FILES, seed=12)
    server = tone_devserver(latency_ms=100, rate_429=0.3, retry_after_s=RETRY_AFTER_S, seed=3)
    workers = [
        medasr_for(
            server,
            fresh_postgres_url,
            MEDASR_CONCURRENCY="2",
            MEDASR_BATCH_SIZE="3",
            MEDASR_STORAGE__LEASE_S=str(LEASE_S),
            MEDASR_PIPELINE__SETTLE_S="0",
        )
        for _ in range(2)
    ]
    run_side_by_side(workers, "run", str(corpus), "--language", "en-IN")

    rows = items(fresh_postgres_url)
    assert {r["source_uri"]: (r["status"], r["text"]) for r in rows} == {
        str(path): ("done", text) for path, text in texts.items()
    }
    entries = server.ledger.entries()
    paid = Counter(e.sha256 for e in entries if e.status == 200)
    throttled = sum(e.status == 429 for e in entries)
    paid_twice = sum(count - 1 for count in paid.values())
    figures(
        "throttled-leases-postgresql",
        files=FILES,
        workers=2,
        lease_s=LEASE_S,
        retry_after_s=RETRY_AFTER_S,
        requests=len(entries),
        throttled=throttled,
        paid_twice=paid_twice,
        lost=FILES - sum(r["status"] == "done" for r in rows),
        wall_s=round(time.monotonic() - started, 1),
    )
    assert throttled > 0  # the service did throttle
    assert paid_twice == 0
    assert len(paid) == FILES
