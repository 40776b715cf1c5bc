"""The database's sums of reviewed notes equal the notes' own, on SQLite and PostgreSQL."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from config.settings import StorageSettings
from storage import open_store
from storage.accuracy_records import AccuracyFilter, NoteAccuracy
from storage.interface import UnitOfWorkFactory
from storage.sources import SourceFile
from tasks.review.group_quality import groups_of, merged_sums, sums_of
from tasks.review.quality_series import accuracy_histogram

START = datetime(2026, 9, 30, 23, 0, tzinfo=UTC)


@pytest.fixture
def notes_store(store_url: str) -> Iterator[UnitOfWorkFactory]:
    opened = open_store(StorageSettings(database_url=store_url), upgrade=True)
    rng = random.Random(7)
    uris = [f"/n/{n}.wav" for n in range(60)]
    with opened.unit_of_work() as uow:
        uow.items.register_items([SourceFile(uri, 1, "v1") for uri in uris], language="en-IN")
        found = uow.item_queries.find_items(source_uris=uris, language="en-IN")
        for n, uri in enumerate(uris):
            words, errors = rng.randint(0, 400), rng.randint(0, 30)
            uow.accuracy.record_accuracy(
                NoteAccuracy(
                    found[uri].id, 1, f"rev-{n % 3}", START + timedelta(hours=n * 13), "en-IN",
                    None if n % 5 == 0 else f"dr-{n % 4}", f"dept-{n % 2}", words, errors // 2,
                    errors // 3, errors - errors // 2 - errors // 3,
                    1.0 if words == 0 and errors == 0 else max(0.0, 1 - errors / max(words, 1)),
                )
            )  # fmt: skip
    yield opened
    opened.dispose()


@pytest.mark.parametrize("by", ["author", "department", "reviewer", "month", None])
def test_the_database_sums_are_the_notes_sums(
    notes_store: UnitOfWorkFactory, by: str | None
) -> None:
    with notes_store.unit_of_work(read_only=True) as uow:
        rows = uow.accuracy.note_figures(AccuracyFilter())
        summed = uow.accuracy.group_sums(AccuracyFilter(), keys=[by] if by else [])
    assert groups_of(summed) == groups_of(sums_of(rows, by=by))
    assert sum(group.notes for group in summed) == 60


def test_the_database_bins_are_the_notes_accuracies(notes_store: UnitOfWorkFactory) -> None:
    with notes_store.unit_of_work(read_only=True) as uow:
        notes = [note for note, _ in uow.accuracy.note_figures(AccuracyFilter())]
        bins = accuracy_histogram(uow.accuracy.group_sums(AccuracyFilter(), keys=["bin"]))
    for histogram_bin in bins:
        inside = [
            n for n in notes
            if (n.accuracy == 1.0 if histogram_bin.low == 1.0 else
                histogram_bin.low <= n.accuracy < histogram_bin.high)
        ]  # fmt: skip
        assert histogram_bin.notes == len(inside), histogram_bin


def test_monthly_sums_merged_are_the_groups_sums(notes_store: UnitOfWorkFactory) -> None:
    with notes_store.unit_of_work(read_only=True) as uow:
        monthly = uow.accuracy.group_sums(AccuracyFilter(), keys=["department", "month"])
        direct = uow.accuracy.group_sums(AccuracyFilter(), keys=["department"])
    assert groups_of(merged_sums(monthly)) == groups_of(direct)
