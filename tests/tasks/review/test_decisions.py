"""The reviewer's decisions over a real SQLite store: revisions, sign-off, stale saves."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest

from config.settings import StorageSettings
from storage import open_review_store
from storage.errors import DraftInTheWay, NotEditable, NotUnderReview, StaleRevision
from storage.export import export_record
from storage.review_interface import ReviewStore
from storage.sources import SourceFile
from tasks.review.decisions import accept_as_is, finalize, save_draft, send_back
from tests.helpers.review import Segment, add_transcribed, audit_events, get_item

MACHINE = [Segment(0, 4000, "met for men 5 hundred"), Segment(4000, 9000, "twice daily")]


@pytest.fixture
def review_store(migrated_sqlite_url: str) -> Iterator[ReviewStore]:
    opened = open_review_store(StorageSettings(database_url=migrated_sqlite_url))
    yield opened
    opened.dispose()


@pytest.fixture
def held(review_store: ReviewStore) -> int:
    return add_transcribed(review_store, "/src/ward/a.wav", segments=MACHINE)


def test_a_draft_is_kept_and_the_item_stays_held(review_store: ReviewStore, held: int) -> None:
    with review_store.unit_of_work() as uow:
        draft = save_draft(
            uow, item_id=held, text="metformin 500 twice daily", author="ann", base_revision=0
        )
    assert (draft.number, draft.kind, draft.base_revision, draft.author) == (1, "draft", 0, "ann")
    item = get_item(review_store, held)
    assert item.status == "needs_review"
    assert item.text == "met for men 5 hundred twice daily"  # the machine's, untouched
    with review_store.unit_of_work(read_only=True) as uow:
        latest = uow.revisions.latest_revision(item)
    assert latest is not None
    assert latest.text == "metformin 500 twice daily"


def test_finalize_makes_the_current_version_and_keeps_the_machine_text(
    review_store: ReviewStore, held: int
) -> None:
    with review_store.unit_of_work() as uow:
        save_draft(uow, item_id=held, text="metformin 500", author="ann", base_revision=0)
        revision, item = finalize(
            uow, item_id=held, text="metformin 500 twice daily", author="bob", base_revision=1
        )
    assert revision.number == 2
    assert revision.kind == "final"
    assert item.status == "done"
    assert item.flags == []
    assert item.text == "metformin 500 twice daily"
    assert item.machine_text == "met for men 5 hundred twice daily"
    assert item.extras["review"]["by"] == "bob"
    assert item.extras["review"]["revision"] == 2
    assert item.extras["review"]["flags"] == ["repetition"]


def test_a_correction_after_filing_keeps_the_first_machine_text(
    review_store: ReviewStore, held: int
) -> None:
    with review_store.unit_of_work() as uow:
        finalize(uow, item_id=held, text="first fix", author="ann", base_revision=0)
    with review_store.unit_of_work() as uow:
        _, item = finalize(uow, item_id=held, text="second fix", author="ann", base_revision=1)
    assert (item.text, item.machine_text) == ("second fix", "met for men 5 hundred twice daily")


def test_a_stale_save_is_refused_and_changes_nothing(review_store: ReviewStore, held: int) -> None:
    with review_store.unit_of_work() as uow:
        save_draft(uow, item_id=held, text="ann's edit", author="ann", base_revision=0)
    stale = pytest.raises(StaleRevision, match=r"revision 1 by ann was saved after")
    with stale, review_store.unit_of_work() as uow:
        finalize(uow, item_id=held, text="bob's edit", author="bob", base_revision=0)
    item = get_item(review_store, held)
    assert item.status == "needs_review"
    assert item.text == "met for men 5 hundred twice daily"
    with review_store.unit_of_work(read_only=True) as uow:
        assert [r.author for r in uow.revisions.list_revisions(item)] == ["ann"]


def test_accept_as_is_signs_off_without_a_revision(review_store: ReviewStore, held: int) -> None:
    with review_store.unit_of_work() as uow:
        item = accept_as_is(uow, item_id=held, author="ann", base_revision=0)
    assert item.status == "done"
    assert item.text == "met for men 5 hundred twice daily"
    assert item.extras["review"]["by"] == "ann"
    with pytest.raises(NotUnderReview), review_store.unit_of_work() as uow:
        accept_as_is(uow, item_id=held, author="ann", base_revision=0)


def test_send_back_forgets_the_transcript_and_its_history(
    review_store: ReviewStore, held: int
) -> None:
    with review_store.unit_of_work() as uow:
        save_draft(uow, item_id=held, text="draft", author="ann", base_revision=0)
        with pytest.raises(DraftInTheWay, match=r"ann saved a draft \(revision 1\)"):
            send_back(uow, item_id=held, author="ann", base_revision=1)
        item = send_back(uow, item_id=held, author="ann", base_revision=1, over_draft=1)
    assert item.status == "pending"
    assert item.text is None
    assert item.machine_text is None
    refused = pytest.raises(NotEditable, match="no transcript to correct")
    with refused, review_store.unit_of_work() as uow:
        save_draft(uow, item_id=held, text="x", author="ann", base_revision=1)


def test_every_decision_made_on_an_older_revision_is_refused(
    review_store: ReviewStore, held: int
) -> None:
    with review_store.unit_of_work() as uow:
        save_draft(uow, item_id=held, text="draft", author="ann", base_revision=0)
    for decide in (
        lambda uow: accept_as_is(uow, item_id=held, author="bob", base_revision=0),
        lambda uow: send_back(uow, item_id=held, author="bob", base_revision=0, over_draft=1),
    ):
        with (
            pytest.raises(StaleRevision, match="revision 1 by ann"),
            review_store.unit_of_work() as uow,
        ):
            decide(uow)
    with review_store.unit_of_work(read_only=True) as uow:
        item = uow.item_queries.get_item(held)
    assert item is not None
    assert item.status == "needs_review"


def test_export_rows_carry_the_machine_text_and_the_sign_off(
    review_store: ReviewStore, held: int
) -> None:
    untouched = add_transcribed(review_store, "/src/ward/b.wav", segments=MACHINE, flags=())
    with review_store.unit_of_work() as uow:
        finalize(uow, item_id=held, text="metformin 500 twice daily", author="ann", base_revision=0)
    with review_store.unit_of_work(read_only=True) as uow:
        rows = {row.source: export_record(row) for row in uow.item_queries.export_rows()}
    corrected, plain = rows["/src/ward/a.wav"], rows["/src/ward/b.wav"]
    assert corrected["text"] == "metformin 500 twice daily"
    assert corrected["machine_text"] == "met for men 5 hundred twice daily"
    assert (corrected["reviewed_by"], corrected["revision"]) == ("ann", 1)
    assert corrected["reviewed_at"] is not None
    assert plain["machine_text"] == plain["text"] == "met for men 5 hundred twice daily"
    assert (plain["reviewed_by"], plain["reviewed_at"], plain["revision"]) == (None, None, None)
    assert get_item(review_store, untouched).status == "done"


def test_every_transcript_waits_when_review_is_required_for_all(
    review_store: ReviewStore,
) -> None:
    with review_store.unit_of_work() as uow:
        uow.items.register_items([SourceFile("/src/c.wav", 10, "v1")], language="en-IN")
        [claimed] = uow.claims.claim_batch(owner="w", language="en-IN", limit=1, lease_s=60)
        uow.claims.finish_item(
            claimed.id, lease_token=claimed.lease_token, text="fine", duration_ms=1000,
            chunk_count=1, extras={}, hold_for_review=True,
        )  # fmt: skip
    item = get_item(review_store, claimed.id)
    assert item.status == "needs_review"
    assert item.flags == []
    with review_store.unit_of_work(read_only=True) as uow:
        queue = uow.reviews.queue_size()
    assert queue.waiting == 1
    assert queue.oldest == item.updated_at


def test_a_purge_takes_the_reviewers_text_too(
    review_store: ReviewStore, held: int, sqlite_url: str
) -> None:
    with review_store.unit_of_work() as uow:
        save_draft(uow, item_id=held, text="a draft", author="ann", base_revision=0)
        finalize(uow, item_id=held, text="the final words", author="ann", base_revision=1)
    with review_store.unit_of_work() as uow:
        uow.retention.purge_items([held], purged_by="test", receipt_key=bytes(32))  # type: ignore[attr-defined]
    item = get_item(review_store, held)
    assert item.status == "purged"
    assert (item.text, item.machine_text) == (None, None)
    assert "machine_text" in item.extras["purged"]["hmac_sha256"]
    with review_store.unit_of_work(read_only=True) as uow:
        assert uow.revisions.list_revisions(item) == []
        assert uow.revisions.latest_revision(item) is None
    with sqlite3.connect(sqlite_url.removeprefix("sqlite:///")) as db:
        assert db.execute("SELECT count(*) FROM revisions").fetchone() == (0,)


def test_each_decision_writes_its_audit_event_with_it(review_store: ReviewStore) -> None:
    """The event is the decision's own: any face calling these gets it, in its transaction."""
    first = add_transcribed(review_store, "/src/ward/a.wav", segments=MACHINE)
    second = add_transcribed(review_store, "/src/ward/b.wav", segments=MACHINE)
    third = add_transcribed(review_store, "/src/ward/c.wav", segments=MACHINE)
    with review_store.unit_of_work() as uow:
        save_draft(uow, item_id=first, text="metformin", author="ann", base_revision=0)
        finalize(uow, item_id=first, text="metformin 500", author="ann", base_revision=1)
        accept_as_is(uow, item_id=second, author="bob", base_revision=None)
        send_back(uow, item_id=third, author="os:cy@ward", base_revision=0)
    with pytest.raises(NotUnderReview), review_store.unit_of_work() as uow:
        accept_as_is(uow, item_id=third, author="bob", base_revision=None)
    events = [(e.action, e.actor, e.item_id, e.path, e.detail) for e in audit_events(review_store)]
    assert events == [
        ("revision_saved", "ann", first, "/src/ward/a.wav",
         {"revision": 1, "base_revision": 0, "kind": "draft"}),
        ("revision_saved", "ann", first, "/src/ward/a.wav",
         {"revision": 2, "base_revision": 1, "kind": "final"}),
        ("finalized", "ann", first, "/src/ward/a.wav", {"revision": 2}),
        ("accepted", "bob", second, "/src/ward/b.wav", None),
        ("sent_back", "os:cy@ward", third, "/src/ward/c.wav", {"base_revision": 0}),
    ]  # fmt: skip
    assert "metformin" not in repr(events)
