"""An admin's account changes record their own events (a real SQLite store)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from config.settings import StorageSettings
from storage import open_review_store
from storage.errors import ReviewerInvalid
from storage.records import ReviewerRecord
from storage.review_interface import ReviewStore
from tasks.review.account_changes import add_account, disable_account, unlock_account
from tests.helpers.review import PASSWORD, audit_events


@pytest.fixture
def review_store(sqlite_url: str) -> Iterator[ReviewStore]:
    opened = open_review_store(StorageSettings(database_url=sqlite_url))
    yield opened
    opened.dispose()


def test_each_change_writes_its_event_in_the_same_unit_of_work(review_store: ReviewStore) -> None:
    with review_store.unit_of_work() as uow:
        added = add_account(uow, name="Ann", role="admin", password=PASSWORD, actor="os:root")
        disabled = disable_account(uow, name="ANN", actor="os:root")
        unlocked = unlock_account(uow, name="ａｎｎ", actor="root")
    assert (added.name, added.role, disabled.disabled) == ("ann", "admin", True)
    assert unlocked.locked_until is None
    events = audit_events(review_store)
    assert [(e.action, e.actor, e.target, e.detail) for e in events] == [
        ("reviewer_added", "os:root", "ann", {"role": "admin"}),
        ("reviewer_disabled", "os:root", "ann", None),
        ("reviewer_unlocked", "root", "ann", None),
    ]
    assert PASSWORD not in repr(events)


@pytest.mark.parametrize("change", [disable_account, unlock_account])
def test_an_unknown_name_changes_nothing_and_records_nothing(
    review_store: ReviewStore, change: Callable[..., ReviewerRecord]
) -> None:
    refused = pytest.raises(ReviewerInvalid, match="no reviewer named 'bob'")
    with refused, review_store.unit_of_work() as uow:
        change(uow, name="bob", actor="root")
    assert audit_events(review_store) == []


def test_a_refused_account_records_nothing(review_store: ReviewStore) -> None:
    refused = pytest.raises(ReviewerInvalid, match="at least 8 characters")
    with refused, review_store.unit_of_work() as uow:
        add_account(uow, name="bob", role="reviewer", password="short", actor="root")
    with review_store.unit_of_work(read_only=True) as uow:
        assert uow.reviewers.list_reviewers() == []
    assert audit_events(review_store) == []
