"""The journal of paid answers and the lease keeper, on a real SQLite store.

What a socket cannot provoke on cue (an SQLite write failing at one exact call) is
injected at the repository, as in test_transcribe.py.
"""

from __future__ import annotations

import asyncio
import stat
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from storage.chunks import Chunks
from storage.errors import LeaseLost, StoreUnavailable
from storage.interface import UnitOfWork, UnitOfWorkFactory
from storage.records import ItemRecord
from tasks.work.journal import Journal, record_paid_chunk, replay_journal
from tasks.work.lease_keeper import LeaseKeeper, renew_items
from tests.helpers.claims import LANG, SHA, claimed, done_texts, paid_for


def test_an_entry_is_private_and_whole(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "data" / "journal")
    item = ItemRecord(**_item_fields())
    path = journal.keep(paid_for(item))
    assert stat.S_IMODE(journal.folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [entry for _, entry in journal.entries()] == [paid_for(item)]
    assert [p.name for p in journal.folder.iterdir()] == [path.name]  # no temporary left


def test_replay_records_same_content_and_drops_what_is_no_longer_wanted(
    store: UnitOfWorkFactory, tmp_path: Path
) -> None:
    same, changed, finished = claimed(store, count=3)
    with store.unit_of_work() as uow:
        uow.claims.finish_item(
            finished.id,
            lease_token=finished.lease_token,
            text="done",
            duration_ms=1,
            chunk_count=1,
            extras={},
        )
    journal = Journal(tmp_path / "journal")
    journal.keep(paid_for(same))
    journal.keep(paid_for(changed, sha256="b" * 64))  # cut from older content
    journal.keep(paid_for(finished))
    (journal.folder / "9-9-broken.json").write_text("{not json")

    result = replay_journal(store, journal)

    assert (result.recorded, result.dropped, result.kept) == (1, 2, 1)
    assert done_texts(store, same) == {0: "patient stable"}
    assert done_texts(store, changed) == {}
    assert [p.name for p in journal.folder.glob("*.json")] == ["9-9-broken.json"]


def test_a_store_that_comes_back_within_the_retry_gets_the_answer(
    store: UnitOfWorkFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    [item] = claimed(store)
    calls = {"n": 0}
    original = Chunks.record_chunk_result

    def busy_twice(self: Chunks, *args: object, **kwargs: object) -> None:
        calls["n"] += 1
        if calls["n"] <= 2:
            raise StoreUnavailable("database is locked")
        original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Chunks, "record_chunk_result", busy_twice)
    journal = Journal(tmp_path / "journal")

    asyncio.run(
        record_paid_chunk(_writer(store, item), paid=paid_for(item), journal=journal, retry_s=10)
    )

    assert calls["n"] == 3
    assert done_texts(store, item) == {0: "patient stable"}
    assert not journal.folder.exists()


def test_a_store_that_stays_down_sends_the_answer_to_the_journal(
    store: UnitOfWorkFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    [item] = claimed(store)

    def down(*_args: object, **_kwargs: object) -> None:
        raise StoreUnavailable("server closed the connection")

    monkeypatch.setattr(Chunks, "record_chunk_result", down)
    journal = Journal(tmp_path / "journal")

    with pytest.raises(StoreUnavailable, match="kept in the journal"):
        asyncio.run(
            record_paid_chunk(
                _writer(store, item), paid=paid_for(item), journal=journal, retry_s=0.3
            )
        )

    assert [entry for _, entry in journal.entries()] == [paid_for(item)]
    assert "patient stable" not in caplog.text
    monkeypatch.undo()
    replay_journal(store, journal)
    assert done_texts(store, item) == {0: "patient stable"}


def test_a_lost_lease_is_not_journaled(store: UnitOfWorkFactory, tmp_path: Path) -> None:
    [item] = claimed(store)
    stale = replace(item, lease_token="an-earlier-claim")
    journal = Journal(tmp_path / "journal")
    with pytest.raises(LeaseLost):
        asyncio.run(
            record_paid_chunk(
                _writer(store, stale), paid=paid_for(item), journal=journal, retry_s=5
            )
        )
    assert not journal.folder.exists()


def test_the_keeper_renews_held_leases_and_stops_a_taken_file(store: UnitOfWorkFactory) -> None:
    mine, taken = claimed(store, count=2, lease_s=1.5)
    only_mine = threading.Event()

    def renew(uow: UnitOfWork, tokens: list[str], lease_s: float) -> frozenset[str]:
        if tokens == [mine.lease_token]:
            only_mine.set()  # a renewal after the one that found `taken` gone
        return renew_items(uow, tokens, lease_s)

    async def go() -> None:
        keeper = LeaseKeeper(store=store, lease_s=1.5, renew=renew)
        async with keeper.holding([mine, taken]):
            with store.unit_of_work() as uow:  # the claim on `taken` ends (given back)
                uow.claims.release_items([taken.lease_token or ""])
            # Only the timer renews from here on: wait for it, not for a duration.
            assert await asyncio.to_thread(only_mine.wait, 30)
            await keeper.require(mine)
            with pytest.raises(LeaseLost):
                await keeper.require(taken)
            with store.unit_of_work() as uow:  # `mine` is still held: a rival gets only `taken`
                rival = uow.claims.claim_batch(owner="rival", language=LANG, limit=2, lease_s=60)
                renewed = uow.item_queries.get_item(mine.id)
        assert [i.id for i in rival] == [taken.id]
        assert renewed.lease_expires_at is not None
        assert mine.lease_expires_at is not None
        assert renewed.lease_expires_at > mine.lease_expires_at  # the timer kept it

    asyncio.run(go())


def _writer(store: UnitOfWorkFactory, item: ItemRecord) -> Callable[[], None]:
    def write() -> None:
        with store.unit_of_work() as uow:
            uow.chunks.record_chunk_result(
                item.id,
                lease_token=item.lease_token,
                index=0,
                start_ms=0,
                end_ms=1000,
                size_bytes=32_044,
                text="patient stable",
            )

    return write


def _item_fields() -> dict[str, object]:
    from datetime import UTC, datetime

    now = datetime.now(UTC)
    return {
        "id": 7, "source_uri": "/archive/7.wav", "language": LANG, "source_version": "v1",
        "sha256": SHA, "size_bytes": 10, "duration_ms": None, "status": "processing",
        "error_kind": None, "error_message": None, "retryable": False, "attempts": 1,
        "next_attempt_at": None, "lease_owner": "w", "lease_expires_at": now, "text": None,
        "extras": {}, "chunk_count": None, "created_at": now, "updated_at": now, "done_at": None,
    }  # fmt: skip


def test_an_entry_its_writer_removes_during_a_replay_is_no_error(
    store: UnitOfWorkFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two workers on one host share the data dir: while one replays the journal at its
    start, the other's group commit is in and it removes its own entry."""
    [item] = claimed(store)
    journal = Journal(tmp_path / "journal")
    path = journal.keep(paid_for(item))
    original = Chunks.record_recovered_chunk

    def and_the_writer_commits(self: Chunks, *args: object, **kwargs: object) -> bool:
        taken = original(self, *args, **kwargs)  # type: ignore[arg-type]
        path.unlink()
        return taken

    monkeypatch.setattr(Chunks, "record_recovered_chunk", and_the_writer_commits)
    result = replay_journal(store, journal)

    assert (result.recorded, result.dropped, result.kept) == (1, 0, 0)
    assert done_texts(store, item) == {0: "patient stable"}


def test_an_entry_gone_between_listing_and_reading_is_skipped_not_kept(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal")
    paid = paid_for(ItemRecord(**_item_fields()))
    kept = {journal.keep(paid), journal.keep(paid)}
    entries = journal.entries()
    path, entry = next(entries)
    (kept - {path}).pop().unlink()  # its writer's commit is in: not unreadable, just done
    assert entry == paid
    assert list(entries) == []
