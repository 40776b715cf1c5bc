"""A reviewed note's figures kept at the decision, for earlier reviews, and after a purge."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import create_engine, text

from config.settings import StorageSettings
from storage import open_review_store
from storage.accuracy_records import AccuracyFilter, NoteAccuracy
from storage.review_interface import ReviewStore
from tasks.review.decisions import accept_as_is, finalize
from tasks.review.measured_notes import measure_earlier_reviews
from tests.helpers.review import Segment, add_transcribed, get_item

MACHINE = [Segment(0, 4000, "patient takes met for men"), Segment(4000, 9000, "twice daily")]


@pytest.fixture
def review_store(migrated_sqlite_url: str) -> Iterator[ReviewStore]:
    opened = open_review_store(StorageSettings(database_url=migrated_sqlite_url))
    yield opened
    opened.dispose()


def figures_of(store: ReviewStore) -> dict[int, NoteAccuracy]:
    with store.unit_of_work(read_only=True) as uow:
        return {note.item_id: note for note, _ in uow.accuracy.note_figures(AccuracyFilter())}


def test_finalize_keeps_the_notes_figures_with_the_reviewer(review_store: ReviewStore) -> None:
    held = add_transcribed(review_store, "/src/a.wav", segments=MACHINE)
    with review_store.unit_of_work() as uow:
        finalize(
            uow, item_id=held, text="Patient takes metformin twice daily.", author="ann",
            base_revision=0,
        )  # fmt: skip
    note = figures_of(review_store)[held]
    # final: patient takes metformin twice daily (5); met->metformin, +for, +men
    assert (note.words, note.substitutions, note.deletions, note.insertions) == (5, 1, 0, 2)
    assert note.accuracy == pytest.approx(0.4)
    assert (note.reviewer, note.revision, note.language) == ("ann", 1, "en-IN")


def test_accept_as_is_counts_every_word_read_as_right(review_store: ReviewStore) -> None:
    held = add_transcribed(review_store, "/src/b.wav", segments=MACHINE)
    with review_store.unit_of_work() as uow:
        accept_as_is(uow, item_id=held, author="bob", base_revision=0)
    note = figures_of(review_store)[held]
    assert (note.words, note.errors, note.accuracy, note.revision) == (7, 0, 1.0, 0)
    assert note.reviewer == "bob"


def test_a_second_correction_replaces_the_notes_figures(review_store: ReviewStore) -> None:
    held = add_transcribed(review_store, "/src/c.wav", segments=MACHINE)
    with review_store.unit_of_work() as uow:
        finalize(uow, item_id=held, text="x", author="ann", base_revision=0)
    with review_store.unit_of_work() as uow:
        finalize(uow, item_id=held, text="patient takes met for men twice daily", author="cy",
                 base_revision=1)  # fmt: skip
    assert [(n.reviewer, n.accuracy) for n in figures_of(review_store).values()] == [("cy", 1.0)]


def test_notes_reviewed_before_measuring_get_their_figures_on_first_use(
    review_store: ReviewStore, sqlite_url: str
) -> None:
    edited = add_transcribed(review_store, "/src/d.wav", segments=MACHINE)
    accepted = add_transcribed(review_store, "/src/e.wav", segments=MACHINE)
    add_transcribed(review_store, "/src/f.wav", segments=MACHINE)  # still held: not reviewed
    with review_store.unit_of_work() as uow:
        finalize(uow, item_id=edited, text="patient takes metformin twice daily", author="ann",
                 base_revision=0)  # fmt: skip
        accept_as_is(uow, item_id=accepted, author="bob", base_revision=0)
    engine = create_engine(sqlite_url)
    with engine.begin() as connection:  # as a store reviewed before 0013 would be
        connection.execute(text("DELETE FROM note_accuracy"))
    engine.dispose()
    with review_store.unit_of_work() as uow:
        assert measure_earlier_reviews(uow.accuracy) == 2
    with review_store.unit_of_work() as uow:
        assert measure_earlier_reviews(uow.accuracy) == 0
    notes = figures_of(review_store)
    assert sorted(notes) == [edited, accepted]
    assert (notes[edited].reviewer, notes[edited].errors, notes[edited].words) == ("ann", 3, 5)
    assert (notes[accepted].reviewer, notes[accepted].accuracy) == ("bob", 1.0)


def test_a_purge_keeps_the_figures_and_removes_the_texts(review_store: ReviewStore) -> None:
    held = add_transcribed(review_store, "/src/g.wav", segments=MACHINE)
    with review_store.unit_of_work() as uow:
        finalize(uow, item_id=held, text="patient takes metformin twice daily", author="ann",
                 base_revision=0)  # fmt: skip
    before = figures_of(review_store)[held]
    with review_store.unit_of_work() as uow:
        uow.retention.purge_items([held], purged_by="test", receipt_key=bytes(32))
    item = get_item(review_store, held)
    assert (item.status, item.text, item.machine_text) == ("purged", None, None)
    assert figures_of(review_store)[held] == before
    with review_store.unit_of_work(read_only=True) as uow:
        assert uow.accuracy.corrected_notes(AccuracyFilter()) == []
        assert uow.revisions.list_revisions(item) == []


def test_corrected_notes_are_those_with_a_word_changed(review_store: ReviewStore) -> None:
    """A sign-off that changed only punctuation and case has no correction to read: the
    Quality page's bounded window of newest corrected notes is spent on notes with one."""
    changed = add_transcribed(review_store, "/src/h.wav", segments=MACHINE)
    unchanged = add_transcribed(review_store, "/src/i.wav", segments=MACHINE)
    with review_store.unit_of_work() as uow:
        finalize(uow, item_id=changed, text="patient takes metformin twice daily", author="ann",
                 base_revision=0)  # fmt: skip
        finalize(uow, item_id=unchanged, text="Patient takes met for men, twice daily.",
                 author="ann", base_revision=0)  # fmt: skip
    assert figures_of(review_store)[unchanged].errors == 0
    with review_store.unit_of_work(read_only=True) as uow:
        found = uow.accuracy.corrected_notes(AccuracyFilter())
    assert [note.item_id for note in found] == [changed]
