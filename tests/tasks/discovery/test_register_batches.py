"""Discovery registers a listing in bounded transactions, never the whole archive in one."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import event

from config.settings import StorageSettings
from storage import open_store
from storage.interface import UnitOfWorkFactory
from tasks.discovery.discover import discover_and_register

FILES = 2_500
# Beside the registration batches, whatever the archive's size: one transaction records
# unreadable entries and resolves folders listed again; a first registration of new
# files also refreshes the planner's statistics (ANALYZE commits).
FOLDERS_TX, STATISTICS_TX = 1, 1


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    """2,500 tiny recordings in year/month/day folders, an hour old (settled)."""
    root = tmp_path / "archive"
    then = time.time() - 3600
    for i in range(FILES):
        folder = root / "2024" / f"{i // 1000 + 1:02d}" / f"{i % 28 + 1:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{i:05d}.wav"
        path.write_bytes(b"RIFF....WAVE")
        os.utime(path, (then, then))
    return root


@pytest.fixture
def store(tmp_path: Path) -> Iterator[UnitOfWorkFactory]:
    opened = open_store(StorageSettings(database_url=f"sqlite:///{tmp_path / 'm.db'}"))
    try:
        yield opened
    finally:
        opened.dispose()


def count_commits(store: UnitOfWorkFactory) -> list[int]:
    commits: list[int] = []
    event.listen(store.engine, "commit", lambda _conn: commits.append(1))
    return commits


def test_2500_files_register_in_three_transactions_of_1000(
    archive: Path, store: UnitOfWorkFactory
) -> None:
    commits = count_commits(store)

    found = discover_and_register(
        source=str(archive), language="en-IN", store=store, settle_s=0, batch_files=1000
    )

    assert (found.listed, found.new, found.unchanged) == (FILES, FILES, 0)
    assert len(commits) == 3 + FOLDERS_TX + STATISTICS_TX
    with store.unit_of_work(read_only=True) as uow:
        assert uow.item_queries.pending_count(language="en-IN") == FILES


def test_the_nightly_no_op_is_three_transactions_too(
    archive: Path, store: UnitOfWorkFactory
) -> None:
    discover_and_register(source=str(archive), language="en-IN", store=store, settle_s=0)
    commits = count_commits(store)

    again = discover_and_register(
        source=str(archive), language="en-IN", store=store, settle_s=0, batch_files=1000
    )

    assert (again.listed, again.new, again.changed, again.unchanged) == (FILES, 0, 0, FILES)
    assert len(commits) == 3 + FOLDERS_TX  # nothing new: statistics unchanged
