"""Answered audio is reused by range: a new split under another cap cuts at the answered
edges, reuses each answered range once, and sends only the rest."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

import pytest

from storage.records import ChunkRecord
from tasks.audio import iter_chunks
from tasks.transcription.coverage import Coverage
from tests.helpers.audio import Bursts

SR = 16_000


def _row(index: int, start_ms: int, end_ms: int, *, status: str = "done") -> ChunkRecord:
    return ChunkRecord(
        item_id=1, index=index, start_ms=start_ms, end_ms=end_ms, size_bytes=0, status=status,
        text=f"t{index}", attempts=1, txn_id=None, latency_ms=None,
        updated_at=datetime.now(UTC),
    )  # fmt: skip


def test_required_cuts_are_chunk_edges_and_nothing_is_lost(bursts: Bursts) -> None:
    cuts = [7 * SR, 7 * SR + 16_000 * 3 + 160, 61 * SR, 100 * SR + 32]
    chunks = list(iter_chunks(bursts.path, max_bytes=20 * 2 * SR + 44, cut_at_samples=cuts))

    edges = {c.end_sample for c in chunks}
    assert set(cuts) <= edges
    assert chunks[0].start_sample == 0
    assert chunks[-1].end_sample == bursts.samples
    assert all(a.end_sample == b.start_sample for a, b in itertools.pairwise(chunks))
    assert all(len(c.wav) <= 20 * 2 * SR + 44 for c in chunks)


@pytest.mark.parametrize("new_cap_s", [12, 20, 45])
def test_a_new_cap_sends_only_what_is_not_answered(bursts: Bursts, new_cap_s: int) -> None:
    """Answered: chunks 1 and 3 of a 30 s split (2 and 4 were refused). A split under
    another cap reuses both ranges once and sends exactly the audio outside them."""
    old = list(iter_chunks(bursts.path, max_bytes=30 * 2 * SR + 44))
    done = {c.index: _row(c.index, c.start_ms, c.end_ms) for c in old if c.index in (1, 3)}
    done |= {2: _row(2, old[1].start_ms, old[1].end_ms, status="failed")}
    coverage = Coverage(done)

    new = list(
        iter_chunks(
            bursts.path, max_bytes=new_cap_s * 2 * SR + 44, cut_at_samples=coverage.cut_points()
        )
    )

    reused = [(c, coverage.reused_text(c)) for c in new]
    kept = [text for _, text in reused if text]
    assert kept == ["t1", "t3"]
    sent = [c for c, text in reused if text is None]
    answered_ms = sum(c.end_ms - c.start_ms for c in old if c.index in (1, 3))
    assert sum(c.end_ms - c.start_ms for c in sent) == old[-1].end_ms - answered_ms
    indices = [coverage.row_index(c) for c in sent]
    assert len(set(indices)) == len(indices)
    assert not set(indices) & {1, 3}  # an answered row is never overwritten
    assert indices == sorted(indices)


def test_overlapping_rows_of_an_old_split_keep_the_earlier() -> None:
    coverage = Coverage({1: _row(1, 0, 1000), 5: _row(5, 500, 1500), 2: _row(2, 1000, 2000)})
    assert [(r.start_ms, r.end_ms) for r in coverage.ranges] == [(0, 1000), (1000, 2000)]
    assert coverage.cut_points() == [0, 16_000, 32_000]


def test_silent_rows_are_judged_again() -> None:
    coverage = Coverage({1: _row(1, 0, 1000, status="silent")})
    assert coverage.ranges == []
    assert coverage.cut_points() == []
