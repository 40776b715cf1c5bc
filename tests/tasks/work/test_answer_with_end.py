"""A file's end rides in its last answer's commit (SQLite and PostgreSQL): one commit per
file saved, and never at the answer's cost: an end that fails, or an answer that needs a
second attempt, leaves the answer committed and the file to be finished as before."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from storage.errors import StoreUnavailable
from storage.interface import UnitOfWork, UnitOfWorkFactory
from storage.records import ItemRecord
from tasks.work.group_commit import GroupWriter
from tasks.work.journal import Journal
from tasks.work.paid_answers import store_chunk_answer
from tests.helpers.claims import claimed, done_texts, paid_for
from tests.helpers.stores import store_on_both_backends  # noqa: F401 (the `store` fixture)


def finish(item: ItemRecord) -> Any:
    def call(uow: UnitOfWork) -> None:
        uow.claims.finish_item(
            item.id, lease_token=item.lease_token, text="stable", duration_ms=1000,
            chunk_count=1, extras={},
        )  # fmt: skip

    return call


def status_of(store: UnitOfWorkFactory, item: ItemRecord) -> str:
    with store.unit_of_work(read_only=True) as uow:
        found = uow.item_queries.get_item(item.id)
    assert found is not None
    return found.status


def answer_with(
    writer: GroupWriter, journal: Journal, item: ItemRecord, end: Any
) -> asyncio.Future[Any] | None:
    async def go() -> asyncio.Future[Any] | None:
        return await store_chunk_answer(
            writer, paid_for(item), lease_token=item.lease_token, silent=False,
            journal=journal, retry_s=5, alongside=end,
        )  # fmt: skip

    return asyncio.run(go())


def test_the_end_and_the_last_answer_share_one_commit(
    store: UnitOfWorkFactory, tmp_path: Path
) -> None:
    (item,) = claimed(store)
    writer, journal = GroupWriter(store), Journal(tmp_path / "journal")

    ended = answer_with(writer, journal, item, finish(item))

    assert ended is not None
    assert ended.exception() is None
    assert (writer.groups, writer.calls) == (1, 2)
    assert status_of(store, item) == "done"
    assert done_texts(store, item) == {0: "patient stable"}
    assert list(journal.entries()) == []


def test_an_end_that_fails_on_its_own_leaves_the_answer_committed(
    store: UnitOfWorkFactory, tmp_path: Path
) -> None:
    (item,) = claimed(store)
    writer, journal = GroupWriter(store), Journal(tmp_path / "journal")

    def finish_then_fail(uow: UnitOfWork) -> None:
        finish(item)(uow)
        raise ValueError("a bug after the end's write")

    ended = answer_with(writer, journal, item, finish_then_fail)

    assert ended is not None
    assert isinstance(ended.exception(), ValueError)
    assert status_of(store, item) == "processing"  # to be finished as before
    assert done_texts(store, item) == {0: "patient stable"}  # paid for: kept
    assert list(journal.entries()) == []


class FirstCommitCut:
    """The real store, except that the first write transaction fails at its commit."""

    def __init__(self, store: UnitOfWorkFactory) -> None:
        self._store = store
        self.cuts = 1

    @contextmanager
    def unit_of_work(self, *, read_only: bool = False) -> Iterator[UnitOfWork]:
        with self._store.unit_of_work(read_only=read_only) as uow:
            yield uow
            if self.cuts and not read_only:
                self.cuts -= 1
                raise StoreUnavailable("database unavailable: the commit was cut (test)")


def test_an_answer_that_needs_a_second_attempt_carries_no_end(
    store: UnitOfWorkFactory, tmp_path: Path
) -> None:
    (item,) = claimed(store)
    writer, journal = GroupWriter(FirstCommitCut(store)), Journal(tmp_path / "journal")

    ended = answer_with(writer, journal, item, finish(item))

    assert ended is not None
    assert isinstance(ended.exception(), StoreUnavailable)
    assert (writer.groups, writer.calls) == (2, 3)  # both, then the answer alone
    assert done_texts(store, item) == {0: "patient stable"}
    assert status_of(store, item) == "processing"
    assert list(journal.entries()) == []


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
def test_a_lost_lease_fails_the_answer_and_its_end_alike(
    store: UnitOfWorkFactory, tmp_path: Path
) -> None:
    (item,) = claimed(store)
    with store.unit_of_work() as uow:
        assert item.lease_token is not None
        uow.claims.release_items([item.lease_token])
    writer, journal = GroupWriter(store), Journal(tmp_path / "journal")

    with pytest.raises(Exception, match="no longer held"):
        answer_with(writer, journal, item, finish(item))

    assert status_of(store, item) == "pending"
    assert done_texts(store, item) == {}
