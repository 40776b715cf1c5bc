"""Part 8, the quality gate through the real command: spoiled answers end needs_review,
the run exits 1 (a person must look), `medasr review` lists them, and a re-sent item is transcribed
again (only it) and ends done.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.reliability.corpus import write_tone_corpus
from tests.reliability.evidence import chunks, items

FILES = 16


@pytest.mark.slow
def test_spoiled_answers_wait_for_review_and_a_resend_makes_them_done(
    tmp_path: Path, tone_devserver, medasr_for, figures
) -> None:
    started = time.monotonic()
    texts = write_tone_corpus(tmp_path / "corpus", FILES, seed=5)
    database_url = f"sqlite:///{tmp_path / 'medasr.db'}"
    spoiling = tone_devserver(p_wrong_script=0.25, p_repeat=0.25, seed=9)
    medasr = medasr_for(spoiling, database_url)

    first = medasr.run("run", str(tmp_path / "corpus"), "--language", "en-IN")

    assert first.returncode == 1, first.describe()  # held back: a person must look
    spoiled = {e.txn_id: e.text_fault for e in spoiling.ledger.entries() if e.text_fault}
    item_of_txn = {c["txn_id"]: c["item_id"] for c in chunks(database_url)}
    expected = {item_of_txn[txn]: fault for txn, fault in spoiled.items()}
    flag_of = {"repeat": "repetition", "wrong_script": "script_mismatch"}
    rows = {r["id"]: r for r in items(database_url)}
    assert expected  # the seed spoils some, not all
    assert len(expected) < FILES
    for item_id, row in rows.items():
        if item_id in expected:
            assert row["status"] == "needs_review"
            assert json.loads(row["flags"]) == [flag_of[expected[item_id]]]
        else:
            assert (row["status"], row["flags"]) == ("done", None)
            assert row["text"] == texts[Path(row["source_uri"])]
    assert first.summary()["files_needs_review"] == str(len(expected))

    listed = medasr.run("review")
    assert listed.returncode == 0, listed.describe()
    listed_ids = {int(line.split("\t")[0]) for line in listed.stdout.splitlines()[1:]}
    assert listed_ids == set(expected)
    resend = [arg for item_id in sorted(expected) for arg in ("--resend", str(item_id))]
    assert medasr.run("review", *resend).returncode == 0

    healthy = tone_devserver()
    second = medasr_for(healthy, database_url).run(
        "run", str(tmp_path / "corpus"), "--language", "en-IN"
    )

    assert second.returncode == 0, second.describe()
    assert len(healthy.ledger.entries()) == len(expected)  # only the re-sent ones
    final = items(database_url)
    assert {r["source_uri"]: (r["status"], r["text"]) for r in final} == {
        str(path): ("done", text) for path, text in texts.items()
    }
    figures(
        "quality-review",
        files=FILES,
        spoiled_answers=len(spoiled),
        needs_review=len(expected),
        caught=sum(rows[i]["status"] == "needs_review" for i in expected),
        false_flags=sum(r["flags"] is not None for i, r in rows.items() if i not in expected),
        resent_requests=len(healthy.ledger.entries()),
        exit_codes=[first.returncode, second.returncode],
        wall_s=round(time.monotonic() - started, 1),
    )
