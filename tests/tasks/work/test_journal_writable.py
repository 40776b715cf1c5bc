"""Issue 20 §5: the journal of paid answers is checked writable before the first request,
and the data dir that holds it is private (0700) like the journal itself."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from config.errors import ConfigError
from tasks.work.journal import Journal, PaidChunk

PAID = PaidChunk(
    item_id=1, source_uri="/a.wav", sha256="0" * 64, index=0, start_ms=0, end_ms=1000,
    size_bytes=32_000, text="t", attempts=1, txn_id=None, latency_ms=None,
)  # fmt: skip


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_data_dir_made_for_the_journal_is_0700(tmp_path: Path) -> None:
    data_dir = tmp_path / "home" / ".medasr"
    Journal(data_dir / "journal").keep(PAID)
    assert (mode(data_dir), mode(data_dir / "journal")) == (0o700, 0o700)
    assert mode(tmp_path / "home") == 0o700  # made here too: ours


def test_a_writable_journal_passes_the_check_and_leaves_nothing(tmp_path: Path) -> None:
    journal = Journal(tmp_path / ".medasr" / "journal")
    journal.check_writable()
    assert list(journal.folder.iterdir()) == []
    assert mode(tmp_path / ".medasr") == 0o700


def test_a_journal_that_cannot_be_written_is_a_configuration_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(ConfigError) as caught:
        Journal(tmp_path / "file" / "journal").check_writable()
    message = str(caught.value)
    assert message.startswith("MEDASR_DATA_DIR: cannot write the journal")
    assert "\n" not in message
