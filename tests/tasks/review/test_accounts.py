"""Reviewers' accounts: argon2id hashes, sign-in, lockout after 5 wrong passwords."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from argon2 import PasswordHasher, extract_parameters

from config.settings import StorageSettings
from storage import open_review_store
from storage.errors import ReviewerInvalid
from storage.review_interface import ReviewStore
from tasks.review.accounts import LoginResult, add_reviewer, sign_in
from tests.helpers.review import PASSWORD, add_account


@pytest.fixture
def review_store(migrated_sqlite_url: str) -> Iterator[ReviewStore]:
    opened = open_review_store(StorageSettings(database_url=migrated_sqlite_url))
    yield opened
    opened.dispose()


def login(store: ReviewStore, name: str, password: str, *, lockout_s: float = 900) -> LoginResult:
    with store.unit_of_work() as uow:
        return sign_in(uow, name=name, password=password, lockout_s=lockout_s).result


def test_the_password_is_stored_as_an_argon2id_hash(
    review_store: ReviewStore, production_argon2: None
) -> None:
    add_account(review_store, "ann")
    with review_store.unit_of_work(read_only=True) as uow:
        stored = uow.reviewers.password_hash("ann")
    assert stored is not None
    assert stored.startswith("$argon2id$")
    assert PASSWORD not in stored


def test_production_hashes_cost_argon2_cffi_defaults(
    review_store: ReviewStore, production_argon2: None
) -> None:
    """The suite hashes cheaply (tests/conftest.py); medasr itself keeps the library's
    RFC 9106 parameters."""
    add_account(review_store, "ann")
    with review_store.unit_of_work(read_only=True) as uow:
        stored = uow.reviewers.password_hash("ann")
    assert stored is not None
    assert extract_parameters(stored) == extract_parameters(PasswordHasher().hash("x"))


def test_right_and_wrong_passwords(review_store: ReviewStore) -> None:
    add_account(review_store, "ann")
    assert login(review_store, "ann", PASSWORD) == LoginResult.OK
    assert login(review_store, "ann", "wrong password") == LoginResult.WRONG
    assert login(review_store, "nobody", PASSWORD) == LoginResult.WRONG


def test_five_wrong_passwords_lock_the_account_even_for_the_right_one(
    review_store: ReviewStore,
) -> None:
    add_account(review_store, "ann")
    results = [login(review_store, "ann", "wrong password") for _ in range(5)]
    assert results == [LoginResult.WRONG] * 4 + [LoginResult.LOCKED_NOW]
    assert login(review_store, "ann", PASSWORD) == LoginResult.LOCKED
    with review_store.unit_of_work() as uow:
        uow.reviewers.unlock("ann")
    assert login(review_store, "ann", PASSWORD) == LoginResult.OK


def test_a_lock_ends_after_its_time(review_store: ReviewStore) -> None:
    add_account(review_store, "ann")
    for _ in range(5):
        login(review_store, "ann", "wrong password", lockout_s=0.0)
    assert login(review_store, "ann", PASSWORD) == LoginResult.OK


def test_a_disabled_account_cannot_sign_in(review_store: ReviewStore) -> None:
    add_account(review_store, "ann")
    with review_store.unit_of_work() as uow:
        uow.reviewers.set_disabled("ann", disabled=True)
    assert login(review_store, "ann", PASSWORD) == LoginResult.DISABLED


@pytest.mark.parametrize(
    ("name", "role", "password", "message"),
    [
        ("", "reviewer", PASSWORD, "reviewer name"),
        ("a b", "reviewer", PASSWORD, "reviewer name"),
        ("ann", "boss", PASSWORD, "role"),
        ("ann", "reviewer", "short", "at least 8"),
    ],
)
def test_bad_accounts_are_refused(review_store, name, role, password, message) -> None:
    with pytest.raises(ReviewerInvalid, match=message), review_store.unit_of_work() as uow:
        add_reviewer(uow, name=name, role=role, password=password)


def test_a_taken_name_is_refused(review_store: ReviewStore) -> None:
    add_account(review_store, "ann")
    with pytest.raises(ReviewerInvalid, match="exists already"):
        add_account(review_store, "ann")


def _state(store: ReviewStore, name: str) -> tuple[int, object]:
    with store.unit_of_work(read_only=True) as uow:
        found = uow.reviewers.get_reviewer(name)
    assert found is not None
    return found.failed_count, found.locked_until


def test_the_lock_counts_wrong_passwords_in_a_row_and_a_locked_account_ignores_the_right_one(
    review_store: ReviewStore,
) -> None:
    add_account(review_store, "ann")
    for _ in range(4):
        login(review_store, "ann", "wrong password")
    assert _state(review_store, "ann") == (4, None)
    assert login(review_store, "ann", PASSWORD) == LoginResult.OK  # in a row: it starts again
    assert _state(review_store, "ann") == (0, None)
    results = [login(review_store, "ann", "wrong password") for _ in range(5)]
    assert results[-1] == LoginResult.LOCKED_NOW
    locked = _state(review_store, "ann")
    assert locked[1] is not None
    # The right password while locked: refused, and neither the lock nor the count moves.
    assert login(review_store, "ann", PASSWORD) == LoginResult.LOCKED
    assert _state(review_store, "ann") == locked
    assert login(review_store, "ann", "wrong password") == LoginResult.LOCKED
    assert _state(review_store, "ann") == locked
