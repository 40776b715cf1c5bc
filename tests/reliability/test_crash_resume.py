"""Part 1, crash and resume: a run over 200 files is killed with SIGKILL three times and
restarted each time.

Kill moments (seeded): as the run begins (the files are listed and counted, no answer
has come: the run sends while Prefect starts, flows/prefect_runtime/head_start.py), mid-batch (some
files of the claimed batches done, others still leased), and with chunks in flight (the
devserver holds each request 300 ms). Each restart takes
back the leases of the killed process at once (same host, process gone). At the end
every file is done exactly once with its exact text, and the ledger shows no chunk sent
again after the success the database recorded; the only successes paid twice are those
a kill cut off in flight, and each of them is explained by a kill.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from tests.flows.prefect_server import wait_until
from tests.reliability.corpus import write_tone_corpus
from tests.reliability.evidence import Kill, audit_resends, by_sha, chunks, items, status_counts
from tests.reliability.harness import Running, ffmpeg_processes

FILES = 200
SEED = 20261121
LATENCY_MS = 300
CONCURRENCY = 8


@pytest.mark.slow
def test_killed_three_times_every_file_is_done_exactly_once(
    tmp_path: Path, tone_devserver, medasr_for, figures
) -> None:
    started = time.monotonic()
    rng = random.Random(SEED)
    corpus = tmp_path / "corpus"
    texts = write_tone_corpus(corpus, FILES, seed=SEED)
    database_url = f"sqlite:///{tmp_path / 'medasr.db'}"
    server = tone_devserver(latency_ms=LATENCY_MS)
    medasr = medasr_for(server, database_url, MEDASR_CONCURRENCY=str(CONCURRENCY))
    command = ("run", str(corpus), "--language", "en-IN")
    kills: list[Kill] = []
    moments: dict[str, dict[str, object]] = {}
    orphans: list[int] = []

    def kill(run: Running, moment: str) -> None:
        ledger_len = len(server.ledger)
        killed_at = run.kill()
        time.sleep(LATENCY_MS / 1000 + 1)  # let the devserver finish what was in flight
        kills.append(Kill(time=killed_at, ledger_len=ledger_len, settled_at=time.time()))
        in_flight = [e for e in server.ledger.entries()[ledger_len:] if e.time < kills[-1].time]
        moments[moment] = {
            "ledger_at_kill": ledger_len,
            "in_flight_at_kill": len(in_flight),
            "items_at_kill": status_counts(database_url),
            "children_left": len(run.orphans),
        }
        orphans.extend(run.orphans)
        run.end_orphans()

    # 1. As the run begins: files listed and counted, no answer yet (each takes 300 ms).
    run = medasr.start(*command)
    run.wait_for_output(r"files to process")
    time.sleep(rng.uniform(0, 0.05))
    kill(run, "as the run begins")
    assert moments["as the run begins"]["ledger_at_kill"] == 0

    # 2. Mid-batch: some files of the claimed batches are done, the rest still leased.
    run = medasr.start(*command)
    target = rng.randint(30, 70)
    wait_until(
        lambda: status_counts(database_url).get("done", 0) >= target or None,
        timeout_s=180,
        what="the mid-batch kill moment",
        alive=[run],
        interval_s=0.02,
    )
    kill(run, "mid-batch")
    assert moments["mid-batch"]["items_at_kill"].get("processing", 0) > 0

    # 3. Chunks in flight: requests are being answered (each held 300 ms) when it dies.
    run = medasr.start(*command)
    sent_before = len(server.ledger)
    target = sent_before + rng.randint(20, 50)
    wait_until(
        lambda: len(server.ledger) >= target or None,
        timeout_s=180,
        what="the chunks-in-flight kill moment",
        alive=[run],
        interval_s=0.02,
    )
    time.sleep(rng.uniform(0, LATENCY_MS / 1000))
    # On a busy machine the run sends in waves, with moments when nothing is in flight:
    # the kill waits for the devserver to hold a request, which is what this moment is.
    wait_until(
        lambda: server.state.capacity.in_flight > 0 or None,
        timeout_s=60,
        what="a request in flight",
        alive=[run],
        interval_s=0.001,
    )
    kill(run, "chunks in flight")
    assert moments["chunks in flight"]["in_flight_at_kill"] > 0

    # 4. The last restart runs to the end.
    final = medasr.start(*command).wait()

    assert final.returncode == 0, final.describe()
    assert "took back" in final.stderr  # the killed run's leases, without waiting them out
    rows = items(database_url)
    assert len(rows) == FILES
    assert {r["source_uri"]: (r["status"], r["text"]) for r in rows} == {
        str(path): ("done", text) for path, text in texts.items()
    }
    recorded = {c["txn_id"] for c in chunks(database_url)}
    entries = server.ledger.entries()
    audit = audit_resends(entries, recorded, kills)
    assert audit.resent_after_recorded == []
    assert audit.unexplained == []
    successes = {
        sha: sum(e.status == 200 for _, e in sent) for sha, sent in by_sha(entries).items()
    }
    assert len(successes) == FILES  # one chunk per file, distinct audio
    assert sum(successes.values()) == FILES + audit.lost_in_kill
    assert medasr.temp_leftovers() == []
    assert ffmpeg_processes(str(corpus)) == []
    figures(
        "crash-resume",
        files=FILES,
        faults_injected=0,
        kills=len(kills),
        kill_moments=moments,
        requests=len(entries),
        retries=0,
        lost=FILES - sum(r["status"] == "done" for r in rows),
        duplicates=len(audit.resent_after_recorded),
        paid_twice_cut_off_by_kill=audit.lost_in_kill,
        children_left_by_kills=len(orphans),
        wall_s=round(time.monotonic() - started, 1),
    )
