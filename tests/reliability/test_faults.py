"""Part 2, faults: 30% of requests fail (429 with Retry-After, 500, 503, and responses
slower than the client's timeout).

Every file ends done (failures that outlast a run's retries are retryable, and
`medasr rerun-failures` finishes them); no request of a chunk exceeds the attempts
budget in a run; the next attempt after a 429 waits at least its Retry-After; no chunk
is sent again after the success the database recorded.
"""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import pytest

from tests.reliability.corpus import write_tone_corpus
from tests.reliability.evidence import audit_resends, by_sha, chunks, items

FILES = 60
MAX_ATTEMPTS = 5
RETRY_AFTER_S = 1
TIMEOUT_S = 1.5
FAULT_RATES = {"rate_429": 0.12, "rate_500": 0.06, "rate_503": 0.08, "rate_slow": 0.04}
MAX_RERUNS = 3


@pytest.mark.slow
def test_thirty_percent_faults_every_file_done_within_budget(
    tmp_path: Path, tone_devserver, medasr_for, figures
) -> None:
    started = time.monotonic()
    texts = write_tone_corpus(tmp_path / "corpus", FILES, seed=2)
    database_url = f"sqlite:///{tmp_path / 'medasr.db'}"
    server = tone_devserver(
        **FAULT_RATES, retry_after_s=RETRY_AFTER_S, slow_s=3 * TIMEOUT_S, latency_ms=20, seed=7
    )
    medasr = medasr_for(
        server,
        database_url,
        MEDASR_MAX_ATTEMPTS=str(MAX_ATTEMPTS),
        MEDASR_REQUEST_TIMEOUT_S=str(TIMEOUT_S),
        MEDASR_CONCURRENCY="6",
        MEDASR_PIPELINE__RETRY_DELAY_S="0",  # rerun-failures may take them at once
    )

    runs = [medasr.run("run", str(tmp_path / "corpus"), "--language", "en-IN")]
    failed_first = [
        (r["error_kind"], r["error_message"])
        for r in items(database_url)
        if r["status"] == "failed"
    ]
    while runs[-1].returncode == 1 and len(runs) <= MAX_RERUNS:
        runs.append(medasr.run("rerun-failures", "--language", "en-IN"))

    assert runs[-1].returncode == 0, runs[-1].describe()
    rows = items(database_url)
    assert {r["source_uri"]: (r["status"], r["text"]) for r in rows} == {
        str(path): ("done", text) for path, text in texts.items()
    }
    assert all(r["attempts"] <= MAX_ATTEMPTS for r in rows)
    entries = server.ledger.entries()
    per_chunk = by_sha(entries)
    # One chunk per file: a chunk's requests fit in (runs it was claimed in) x budget.
    assert len(per_chunk) == FILES
    chunk_item = {c["txn_id"]: c["item_id"] for c in chunks(database_url)}
    item_attempts = {r["id"]: r["attempts"] for r in rows}
    for sha, sent in per_chunk.items():
        recorded = [e for _, e in sent if e.txn_id in chunk_item]
        assert len(recorded) == 1, sha
        claims = item_attempts[chunk_item[recorded[0].txn_id]]
        # A 429 costs time, never an attempt (service/retrying.py, DESIGN.md §3).
        attempts = [e for _, e in sent if e.status != 429]
        assert len(attempts) <= claims * MAX_ATTEMPTS, (sha, [e.status for _, e in sent])
    # Retry-After: the next attempt of the same chunk came no sooner.
    waits = []
    for sent in per_chunk.values():
        ordered = sorted((e for _, e in sent), key=lambda e: e.time)
        for throttled, following in itertools.pairwise(ordered):
            if throttled.status == 429:
                waits.append(following.time - throttled.time)
    assert waits, "no 429 was followed by a retry"
    assert min(waits) >= RETRY_AFTER_S, sorted(waits)[:5]
    audit = audit_resends(entries, set(chunk_item), kills=[])
    assert audit.resent_after_recorded == []
    assert audit.unexplained == []
    faults = [e.fault for e in entries if e.fault is not None]
    figures(
        "faults",
        files=FILES,
        faults_injected=len(faults),
        fault_share=round(len(faults) / len(entries), 3),
        faults_by_kind={k: faults.count(k) for k in sorted(set(faults))},
        kills=0,
        runs=[r.args[0] for r in runs],
        failed_after_first_run=failed_first,
        requests=len(entries),
        retries=sum(int(r.summary().get("retries", 0)) for r in runs),
        max_requests_per_chunk=max(len(s) for s in per_chunk.values()),
        shortest_wait_after_429_s=round(min(waits), 3),
        lost=FILES - sum(r["status"] == "done" for r in rows),
        duplicates=len(audit.resent_after_recorded),
        wall_s=round(time.monotonic() - started, 1),
    )
