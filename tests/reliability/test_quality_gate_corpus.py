"""The quality gate over the whole clean corpus and under each devserver text fault."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.reliability.quality_measure import (
    DEFAULT_CAP_BYTES,
    FAULT_FLAGS,
    SMALL_CAP_BYTES,
    build_corpus,
    measure,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_corpus(tmp_path_factory.mktemp("quality") / "corpus")


@pytest.mark.parametrize("cap_bytes", [DEFAULT_CAP_BYTES, SMALL_CAP_BYTES], ids=["5MB", "224kB"])
def test_clean_input_raises_no_flag(corpus: Path, cap_bytes: int) -> None:
    tally = measure(corpus, faults={}, cap_bytes=cap_bytes)

    assert tally.recordings == 46  # samples/ (4), 40 short dictations, the long one twice
    assert (tally.false_flags, tally.false_examples) == (0, [])


@pytest.mark.parametrize("fault", sorted(FAULT_FLAGS))
def test_every_provoked_fault_is_caught(corpus: Path, fault: str) -> None:
    tally = measure(corpus, faults={fault: 0.3}, seed=11)

    assert tally.provoked_chunks > 20
    assert tally.caught_chunks == tally.provoked_chunks
    assert tally.caught_recordings == tally.provoked_recordings > 3
    assert (tally.false_flags, tally.false_examples) == (0, [])
