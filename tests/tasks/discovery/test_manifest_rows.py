"""A manifest row that names no file the listing found is said, not passed over: its
columns (a patient's identifiers) reach no recording, and a person must know which."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from storage.interface import UnitOfWorkFactory
from tasks.discovery.discover import discover_and_register


def test_manifest_rows_naming_no_listed_file_are_named_in_one_warning(
    tmp_path: Path, store: UnitOfWorkFactory, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "dictation"
    root.mkdir()
    (root / "a.wav").write_bytes(b"RIFF")  # listed (what it holds is the run's business)
    (root / "medasr.csv").write_text(
        "path,mrn\na.wav,111\nA2.wav,222\nward/b.wav,333\n", encoding="utf-8"
    )
    caplog.set_level(logging.WARNING)

    found = discover_and_register(source=str(root), language="en-IN", store=store, settle_s=0)

    assert found.listed == 1
    said = [r.getMessage() for r in caplog.records if "manifest" in r.getMessage()]
    assert said == [
        "the manifest names 2 file(s) this listing did not find (not there, not audio, or "
        "left out by --include/--exclude): A2.wav, ward/b.wav; their columns reach no recording"
    ]
