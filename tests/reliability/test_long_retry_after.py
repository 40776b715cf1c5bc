"""A 429 whose Retry-After is longer than a request may take (a quota spent for the day).

The call that got it fails at once, retryable (it cannot wait that long within
MEDASR_SERVICE__RETRY_MAX_TOTAL_S). The pause it starts holds every other request of
the run too: those fail the same way, unsent, instead of waiting out the day with
their recordings claimed. The run ends with exit code 1, and nothing was sent twice.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.reliability.corpus import age_files, write_tone_corpus
from tests.reliability.evidence import items

FILES = 3
DAY_S = 86_400
HANG_S = 180.0  # far past a run of three short files: only a run waiting out the day gets here


def test_a_retry_after_past_the_budget_fails_the_run_s_files_unsent(
    tmp_path: Path, tone_devserver, medasr_for, prefect_api
) -> None:
    write_tone_corpus(tmp_path / "corpus", FILES, seed=5)
    age_files(tmp_path / "corpus")
    database_url = f"sqlite:///{tmp_path / 'medasr.db'}"
    server = tone_devserver(fault_script=("429",), retry_after_s=DAY_S)
    medasr = medasr_for(server, database_url, MEDASR_CONCURRENCY="1", **prefect_api)

    try:
        ended = medasr.run("run", str(tmp_path / "corpus"), "--language", "en-IN", timeout_s=HANG_S)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"medasr run waited out a {DAY_S} s Retry-After") from None

    assert ended.returncode == 1, ended.describe()
    assert "Traceback" not in ended.output
    assert server.ledger.statuses() == [429]  # the others were never sent
    rows = items(database_url)
    assert [(r["status"], r["error_kind"]) for r in rows] == [("failed", "throttled")] * FILES
    assert all(str(DAY_S) in r["error_message"] for r in rows), rows  # the wait asked for
    assert all(r["lease_owner"] is None for r in rows)
