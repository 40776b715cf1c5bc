"""Part 7, many workers: three `medasr run` processes at once over the same 300 files, one
PostgreSQL database (upgraded first with `medasr db upgrade`). Each file is transcribed
exactly once: one request per file in the ledger, one done item per file, exact texts.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.reliability.corpus import write_tone_corpus
from tests.reliability.evidence import by_sha, items
from tests.reliability.harness import run_side_by_side

FILES = 300
WORKERS = 3


@pytest.mark.slow
@pytest.mark.postgres
def test_three_workers_share_the_backlog_and_transcribe_each_file_once(
    tmp_path: Path, fresh_postgres_url: str, tone_devserver, medasr_for, figures
) -> None:
    started = time.monotonic()
    corpus = tmp_path / "corpus"
    texts = write_tone_corpus(corpus, FILES, seed=7)
    server = tone_devserver(latency_ms=40)
    workers = [
        medasr_for(server, fresh_postgres_url, MEDASR_CONCURRENCY="4", MEDASR_BATCH_SIZE="20")
        for _ in range(WORKERS)
    ]
    finished = run_side_by_side(workers, "run", str(corpus), "--language", "en-IN")

    rows = items(fresh_postgres_url)
    assert len(rows) == FILES
    assert {r["source_uri"]: (r["status"], r["text"]) for r in rows} == {
        str(path): ("done", text) for path, text in texts.items()
    }
    entries = server.ledger.entries()
    per_file = {sha: len(sent) for sha, sent in by_sha(entries).items()}
    assert len(per_file) == FILES
    assert set(per_file.values()) == {1}  # no faults injected: one request, once
    shares = [int(done.summary().get("files_done", 0)) for done in finished]
    assert sum(shares) == FILES
    figures(
        "many-workers-postgresql",
        files=FILES,
        workers=WORKERS,
        faults_injected=0,
        kills=0,
        requests=len(entries),
        files_done_per_worker=shares,
        lost=FILES - sum(r["status"] == "done" for r in rows),
        duplicates=len(entries) - FILES,
        wall_s=round(time.monotonic() - started, 1),
    )
