"""Part 4: a truncated recording keeps what was paid for, and a rerun never pays again.

Truncated FLAC, mp3 and m4a (index at the start) dictations, about 65 s cut to 60% of
their bytes, through the real `medasr run` against the tone devserver: the readable
part is transcribed and the item is marked partial with where and why. `rerun-failures
--include-permanent` and a second `run` then send nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.damaged_tail import TEXT, assert_readable_prefix, truncated
from tests.reliability.corpus import age_files
from tests.reliability.evidence import items

CAP_BYTES = 20 * 32_000 + 44  # 20 s chunks: the readable part is two or more chunks
# Several medasr runs with Prefect start-ups (about a minute): CI runs it, `make test` does not.
pytestmark = pytest.mark.slow


def test_truncated_files_keep_their_readable_part_and_are_not_paid_twice(
    tmp_path: Path, tone_devserver, medasr_for, figures
) -> None:
    root = tmp_path / "ward"
    root.mkdir()
    for suffix in ("flac", "mp3", "m4a"):
        scratch = tmp_path / suffix
        scratch.mkdir()
        truncated(scratch, suffix).rename(root / f"cut.{suffix}")
    age_files(root)
    database_url = f"sqlite:///{tmp_path / 'medasr.db'}"
    server = tone_devserver()
    medasr = medasr_for(server, database_url, MEDASR_MAX_UPLOAD_BYTES=str(CAP_BYTES))

    first = medasr.run("run", str(root), "--language", "en-IN")
    paid = len(server.ledger)
    rows = items(database_url)

    # Partial transcripts are kept but held for a person (the quality gate's `partial`).
    assert first.returncode == 1, first.describe()
    for row in rows:
        assert row["status"] == "needs_review", (row, first.describe())
        assert "partial" in json.loads(row["flags"]), row["flags"]
        assert_readable_prefix(row["text"], full=TEXT)
        partial = json.loads(row["extras"])["partial"]
        assert partial["error_kind"] == "corrupt_audio"
        assert 30_000 <= partial["damaged_at_ms"] <= 45_000, partial
        assert partial["damaged_at_ms"] == row["duration_ms"]
        assert "truncated" in partial["reason"] or "damaged" in partial["reason"], partial
    assert paid >= 2 * len(rows)

    rerun = medasr.run("rerun-failures", "--include-permanent")
    again = medasr.run("run", str(root), "--language", "en-IN")

    assert (rerun.returncode, again.returncode) == (0, 0), rerun.describe() + again.describe()
    assert len(server.ledger) == paid  # nothing paid twice
    assert [r["text"] for r in items(database_url)] == [r["text"] for r in rows]
    figures("damaged-tail", files=len(rows), requests=paid, paid_twice=len(server.ledger) - paid)
