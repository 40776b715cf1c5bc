"""Fixtures of the workstation's tests: a real SQLite store, accounts, held recordings,
the workstation served over a real socket (`served`) and Chromium (`browser`, one per
module); a module that needs other settings defines its own `served`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from config.settings import StorageSettings
from storage import open_review_store
from storage.review_interface import ReviewStore
from tests.helpers.review import LANG, Segment, add_account, add_transcribed, file_fingerprint
from tests.web.browser import launched_browser
from tests.web.workstation import Served, serve, write_tone_wav

SEGMENTS = [
    Segment(0, 3000, "met for men 5 hundred"),
    Segment(3000, 6000, "twice daily"),
    Segment(6000, 9000, "review in 6 weeks"),
]


@pytest.fixture
def review_store(migrated_sqlite_url: str) -> Iterator[ReviewStore]:
    opened = open_review_store(StorageSettings(database_url=migrated_sqlite_url))
    yield opened
    opened.dispose()


@pytest.fixture
def accounts(review_store: ReviewStore) -> None:
    add_account(review_store, "ann")
    add_account(review_store, "bob")
    add_account(review_store, "root", role="admin")


@pytest.fixture
def recording(review_store: ReviewStore, tmp_path: Path) -> int:
    """A held recording of 9 s whose audio file exists."""
    folder = tmp_path / "ward"
    folder.mkdir()
    wav = write_tone_wav(folder / "a.wav", seconds=9.0)
    with review_store.unit_of_work() as uow:  # pages name recordings relative to a run's source
        uow.runs.start_run(source=str(tmp_path), language=LANG)
    return add_transcribed(review_store, str(wav), segments=SEGMENTS, **file_fingerprint(wav))


@pytest.fixture
def served(review_store: ReviewStore, accounts, recording) -> Iterator[Served]:
    with serve(review_store) as running:
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from launched_browser()
