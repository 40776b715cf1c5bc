"""Part 4: lowering MEDASR_MAX_UPLOAD_BYTES after a 413 sends only what was not answered.

The service accepts at most 1.3 MB (the devserver's --max-bytes); medasr starts with a
1.6 MB cap, so its longer chunks are refused (413, the file fails and tells the operator
to lower the cap) while the shorter ones are answered and paid. The operator lowers the
cap and re-queues: the answered audio is reused by range, only the refused audio is
sent, split under the new cap; the transcript is whole and no audio is paid twice.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import soundfile

from tests.reliability.corpus import age_files, tone_samples
from tests.reliability.evidence import chunks, items

# Several medasr runs with Prefect start-ups (about a minute): CI runs it, `make test` does not.
pytestmark = pytest.mark.slow

SENTENCE = "note {}. patient seen on the ward. chest clear."  # 7 s of tone dictation
FIRST = " ".join(SENTENCE.format(n) for n in range(5))  # 35 s, then 3 s of silence
REST = " ".join(SENTENCE.format(n) for n in range(5, 25))  # 140 s
SERVICE_MAX_BYTES = 1_300_044  # about 40 s
FIRST_CAP_BYTES = 1_600_044  # 50 s: chunks of 30-50 s, the longer ones refused
SECOND_CAP_BYTES = 960_044  # 30 s


def _write_note(path: Path) -> None:
    """FIRST, a 3 s pause (the first chunk ends there: under the service's limit), REST."""
    pause = np.zeros(3 * 16_000, dtype=np.int16)
    samples = np.concatenate([tone_samples(FIRST, sample_rate_hz=16_000), pause,
                              tone_samples(REST, sample_rate_hz=16_000)])  # fmt: skip
    path.parent.mkdir(parents=True)
    soundfile.write(path, samples, 16_000, subtype="PCM_16")


def _paid_ms(database_url: str) -> list[tuple[int, int]]:
    """Audio ranges answered by the service (chunk rows with a text from a 200)."""
    rows = [r for r in chunks(database_url) if r["status"] == "done"]
    return sorted((r["start_ms"], r["end_ms"]) for r in rows)


def test_lowering_the_cap_sends_only_the_refused_audio(
    tmp_path: Path, tone_devserver, medasr_for, figures
) -> None:
    root = tmp_path / "ward"
    _write_note(root / "long-note.wav")
    age_files(root)
    database_url = f"sqlite:///{tmp_path / 'medasr.db'}"
    server = tone_devserver(max_bytes=SERVICE_MAX_BYTES)
    medasr = medasr_for(server, database_url)
    cap = {"MEDASR_MAX_UPLOAD_BYTES": str(FIRST_CAP_BYTES)}

    first = medasr.run("run", str(root), "--language", "en-IN", **cap)
    (row,) = items(database_url)
    answered_before = _paid_ms(database_url)
    paid_first = server.ledger.statuses().count(200)
    requests_first = len(server.ledger)

    assert (row["status"], first.returncode) == ("failed", 1), first.describe()
    assert "lower MEDASR_MAX_UPLOAD_BYTES" in row["error_message"]
    assert answered_before, "no chunk fitted the service's limit: the test proves nothing"

    cap = {"MEDASR_MAX_UPLOAD_BYTES": str(SECOND_CAP_BYTES)}
    rerun = medasr.run("rerun-failures", "--include-permanent", **cap)

    (row,) = items(database_url)
    assert (row["status"], row["text"]) == ("done", f"{FIRST} {REST}"), rerun.describe()
    paid = _paid_ms(database_url)
    assert set(answered_before) <= set(paid)  # kept, not replaced
    overlaps = sum(max(0, a_end - b_start) for (_, a_end), (b_start, _) in itertools.pairwise(paid))
    assert overlaps == 0  # no audio answered twice
    assert sum(end - start for start, end in paid) == row["duration_ms"]  # none lost
    figures(
        "cap-change",
        requests_first=requests_first,
        paid_first=paid_first,
        requests_second=len(server.ledger) - requests_first,
        paid_second=server.ledger.statuses().count(200) - paid_first,
        paid_twice_ms=overlaps,
        lost_ms=row["duration_ms"] - sum(end - start for start, end in paid),
    )
