"""Group commit on a real store (SQLite and PostgreSQL): many callers, one transaction.

A failing call rolls back its own savepoint only; a group whose commit fails fails
every caller and leaves each paid answer in the journal; a process killed between the
answer and its group's commit leaves the answer on disk for the next run, which records
it (nothing lost) so that it is never sent again (nothing bought twice).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest

from storage.errors import LeaseLost, StoreUnavailable
from storage.interface import UnitOfWork, UnitOfWorkFactory
from storage.records import ItemRecord
from tasks.work.group_commit import GroupWriter
from tasks.work.journal import Journal, replay_journal
from tasks.work.lease_keeper import LeaseKeeper
from tasks.work.paid_answers import store_chunk_answer
from tests.helpers.claims import claimed, done_texts, paid_for
from tests.helpers.stores import store_on_both_backends  # noqa: F401 (the `store` fixture)

ROOT = Path(__file__).resolve().parents[3]


class CommitCut:
    """The real store, except that every write transaction fails at its commit."""

    def __init__(self, store: UnitOfWorkFactory) -> None:
        self._store = store
        self.cut = True

    @contextmanager
    def unit_of_work(self, *, read_only: bool = False) -> Iterator[UnitOfWork]:
        with self._store.unit_of_work(read_only=read_only) as uow:
            yield uow
            if self.cut and not read_only:  # raised inside: the real store rolls back
                raise StoreUnavailable("database unavailable: the commit was cut (test)")

    def dispose(self) -> None:
        """The real store is closed by its fixture."""


def status_of(store: UnitOfWorkFactory, item: ItemRecord) -> str:
    with store.unit_of_work(read_only=True) as uow:
        found = uow.item_queries.get_item(item.id)
    assert found is not None
    return found.status


def finish(item: ItemRecord, text: str = "done") -> object:
    def call(uow: UnitOfWork) -> None:
        uow.claims.finish_item(
            item.id,
            lease_token=item.lease_token,
            text=text,
            duration_ms=1000,
            chunk_count=1,
            extras={},
        )

    return call


async def answer(
    writer: GroupWriter, journal: Journal, item: ItemRecord, *, retry_s: float
) -> None:
    """The paid answer of `item`'s chunk 0, recorded under the lease `item` carries."""
    await store_chunk_answer(
        writer,
        paid_for(item),
        lease_token=item.lease_token,
        silent=False,
        journal=journal,
        retry_s=retry_s,
    )


def test_calls_queued_together_share_one_transaction_and_each_gets_its_result(
    store: UnitOfWorkFactory,
) -> None:
    items = claimed(store, count=5)
    writer = GroupWriter(store)

    async def go() -> list[object]:
        return await asyncio.gather(
            *(writer.write(finish(item)) for item in items),
            writer.write(lambda uow: uow.item_queries.get_item(items[0].id)),
        )

    *finished, read_back = asyncio.run(go())

    assert (writer.groups, writer.calls) == (1, 6)
    assert finished == [None] * 5
    assert isinstance(read_back, ItemRecord)
    assert read_back.status == "done"
    assert [status_of(store, item) for item in items] == ["done"] * 5


def test_a_failing_call_rolls_back_only_itself_and_is_raised_to_its_caller_alone(
    store: UnitOfWorkFactory,
) -> None:
    first, broken, stale, last = claimed(store, count=4)
    writer = GroupWriter(store)

    def finish_then_fail(uow: UnitOfWork) -> None:
        finish(broken)(uow)  # type: ignore[operator]
        raise ValueError("a bug after a write")

    async def go() -> list[object]:
        return await asyncio.gather(
            writer.write(finish(first)),
            writer.write(finish_then_fail),
            writer.write(finish(replace(stale, lease_token="an-earlier-claim"))),
            writer.write(finish(last)),
            return_exceptions=True,
        )

    outcomes = asyncio.run(go())

    assert writer.groups == 1
    assert outcomes[0] is None
    assert outcomes[3] is None
    assert isinstance(outcomes[1], ValueError)
    assert isinstance(outcomes[2], LeaseLost)
    statuses = [status_of(store, item) for item in (first, broken, stale, last)]
    assert statuses == ["done", "processing", "processing", "done"]


def test_a_group_whose_commit_fails_keeps_every_paid_answer_for_the_next_run(
    store: UnitOfWorkFactory, tmp_path: Path
) -> None:
    one, two = claimed(store, count=2)
    cut = CommitCut(store)
    writer, journal = GroupWriter(cut), Journal(tmp_path / "journal")

    async def go() -> list[object]:
        return await asyncio.gather(
            *(
                store_chunk_answer(
                    writer,
                    paid_for(item),
                    lease_token=item.lease_token,
                    silent=False,
                    journal=journal,
                    retry_s=0.2,
                )
                for item in (one, two)
            ),
            return_exceptions=True,
        )

    outcomes = asyncio.run(go())

    assert all(isinstance(o, StoreUnavailable) for o in outcomes)
    assert (done_texts(store, one), done_texts(store, two)) == ({}, {})
    kept = sorted(entry.item_id for _, entry in journal.entries() if entry is not None)
    assert kept == [one.id, two.id]
    assert replay_journal(store, journal).recorded == 2
    assert done_texts(store, one) == done_texts(store, two) == {0: "patient stable"}
    assert list(journal.entries()) == []


def test_a_committed_answer_leaves_no_journal_entry_and_a_lost_lease_none_either(
    store: UnitOfWorkFactory, tmp_path: Path
) -> None:
    mine, taken = claimed(store, count=2)
    writer, journal = GroupWriter(store), Journal(tmp_path / "journal")
    stale = replace(taken, lease_token="an-earlier-claim")

    async def go() -> list[object]:
        return await asyncio.gather(
            *(
                store_chunk_answer(
                    writer,
                    paid_for(item),
                    lease_token=item.lease_token,
                    silent=False,
                    journal=journal,
                    retry_s=5,
                )
                for item in (mine, stale)
            ),
            return_exceptions=True,
        )

    outcomes = asyncio.run(go())

    assert outcomes[0] is None
    assert isinstance(outcomes[1], LeaseLost)
    assert (done_texts(store, mine), done_texts(store, taken)) == ({0: "patient stable"}, {})
    assert list(journal.entries()) == []


KILLED_BEFORE_COMMIT = """
import asyncio, json, os, signal, sys
from contextlib import contextmanager
from pathlib import Path
from config.settings import StorageSettings
from storage import open_store
from storage.records import ItemRecord
from tasks.work.group_commit import GroupWriter
from tasks.work.journal import Journal, PaidChunk
from tasks.work.paid_answers import store_chunk_answer

url, journal_dir, items = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
store = open_store(StorageSettings(database_url=url))

class KilledAtCommit:
    @contextmanager
    def unit_of_work(self, *, read_only=False):
        with store.unit_of_work(read_only=read_only) as uow:
            yield uow
            if not read_only:  # the group's calls ran; the process dies before COMMIT
                os.kill(os.getpid(), signal.SIGKILL)

async def main():
    writer, journal = GroupWriter(KilledAtCommit()), Journal(Path(journal_dir))
    await asyncio.gather(*(
        store_chunk_answer(writer, PaidChunk(**paid), lease_token=token, silent=False,
                           journal=journal, retry_s=5)
        for paid, token in items
    ))

asyncio.run(main())
"""


def test_a_process_killed_between_the_answers_and_their_commit_loses_none_of_them(
    store: UnitOfWorkFactory, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    one, two = claimed(store, count=2)
    journal = Journal(tmp_path / "journal")
    paid = [(paid_for(item, index=3).__dict__, item.lease_token) for item in (one, two)]
    url = str(store.engine.url.render_as_string(hide_password=False))  # type: ignore[attr-defined]

    child = subprocess.run(
        [sys.executable, "-c", KILLED_BEFORE_COMMIT, url, str(journal.folder), json.dumps(paid)],
        cwd=ROOT,
        env=os.environ | {"PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert child.returncode == -signal.SIGKILL, child.stderr[-2000:]
    assert (done_texts(store, one), done_texts(store, two)) == ({}, {})  # never committed
    assert sorted(e.item_id for _, e in journal.entries() if e is not None) == [one.id, two.id]
    assert replay_journal(store, journal).recorded == 2  # the next run, before it sends
    assert done_texts(store, one) == done_texts(store, two) == {3: "patient stable"}
    assert list(journal.entries()) == []


def test_a_lease_renewal_joins_the_group_instead_of_locking_held_rows_on_its_own(
    store: UnitOfWorkFactory,
) -> None:
    # On PostgreSQL a renewal in a transaction of its own locks every held row, in its
    # own order, while a group locks some of them in another: a deadlock.
    items = claimed(store, count=2)
    writer = GroupWriter(store)
    keeper = LeaseKeeper(store=store, lease_s=60, writer=writer)

    async def go() -> None:
        async with keeper.holding(items):  # renews once, at once: a group of its own
            await asyncio.gather(
                writer.write(lambda uow: uow.item_queries.get_item(items[0].id)),
                keeper.renew_now(),
            )
            for item in items:
                await keeper.require(item)  # renewed, not lost

    asyncio.run(go())

    assert (writer.groups, writer.calls) == (2, 3)


@pytest.mark.parametrize("failing_at", [0, 2, 4])
def test_a_call_that_writes_then_raises_leaves_nothing_and_its_neighbours_commit(
    store: UnitOfWorkFactory, failing_at: int
) -> None:
    # The group first runs without savepoints; a raising call makes it run again, each
    # call in a savepoint of its own: its writes must not stand, its neighbours' must.
    items = claimed(store, count=5)
    writer = GroupWriter(store)

    def finish_then_fail(uow: UnitOfWork) -> None:
        finish(items[failing_at], text="must not stand")(uow)  # type: ignore[operator]
        raise ValueError("a bug after a write")

    calls = [finish(item) for item in items]
    calls[failing_at] = finish_then_fail

    async def go() -> list[object]:
        return await asyncio.gather(
            *(writer.write(call) for call in calls),  # type: ignore[arg-type]
            writer.write(lambda uow: uow.item_queries.get_item(items[-1].id)),
            return_exceptions=True,
        )

    *outcomes, read_back = asyncio.run(go())

    assert (writer.groups, writer.calls, writer.reruns) == (1, 6, 1)
    assert [isinstance(o, ValueError) for o in outcomes] == [i == failing_at for i in range(5)]
    want = ["processing" if i == failing_at else "done" for i in range(5)]
    assert [status_of(store, item) for item in items] == want
    assert isinstance(read_back, ItemRecord)
    assert read_back.status == want[-1]  # what the committed transaction saw


def test_a_group_whose_calls_all_succeed_commits_in_one_pass(store: UnitOfWorkFactory) -> None:
    items = claimed(store, count=3)
    writer = GroupWriter(store)

    async def go() -> None:
        await asyncio.gather(*(writer.write(finish(item)) for item in items))  # type: ignore[arg-type]

    asyncio.run(go())

    assert (writer.groups, writer.calls, writer.reruns) == (1, 3, 0)
    assert [status_of(store, item) for item in items] == ["done"] * 3
