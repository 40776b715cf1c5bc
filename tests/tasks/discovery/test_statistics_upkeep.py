"""The planner's statistics are refreshed after a registration and at the end of a run.

An SQLite store is never analyzed by SQLite itself; without statistics its planner may
pick a broad index as the archive grows (issue 23). `sqlite_stat1` holds what ANALYZE
found: its rows for `items` are the evidence.
"""

from __future__ import annotations

from pathlib import Path

import soundfile

from devserver.tone import encode_tone_dictation
from storage.interface import UnitOfWorkFactory
from tasks.discovery.discover import discover_and_register
from tasks.transcription.bookkeeping import finish_run, start_run


def _item_statistics(store: UnitOfWorkFactory) -> int:
    with store.engine.connect() as connection:
        found = connection.exec_driver_sql(
            "SELECT count(*) FROM sqlite_master WHERE name = 'sqlite_stat1'"
        ).scalar()
        if not found:
            return 0
        return int(
            connection.exec_driver_sql(
                "SELECT count(*) FROM sqlite_stat1 WHERE tbl = 'items'"
            ).scalar()
            or 0
        )


def _forget_statistics(store: UnitOfWorkFactory) -> None:
    with store.engine.begin() as connection:
        connection.exec_driver_sql("DELETE FROM sqlite_stat1")


def test_registration_of_new_files_and_the_end_of_a_run_refresh_statistics(
    store: UnitOfWorkFactory, tmp_path: Path
) -> None:
    folder = tmp_path / "archive"
    folder.mkdir()
    for name in ("a", "b", "c"):
        soundfile.write(folder / f"{name}.wav", encode_tone_dictation(name), 16_000)
    assert _item_statistics(store) == 0

    found = discover_and_register(source=str(folder), language="en-IN", store=store, settle_s=0)
    assert found.new == 3
    assert _item_statistics(store) > 0

    _forget_statistics(store)
    run_id = start_run(store, source=str(folder), language="en-IN")
    finish_run(store, run_id, counts={"files": 3}, status="completed")
    assert _item_statistics(store) > 0
