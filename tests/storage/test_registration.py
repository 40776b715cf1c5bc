"""Registration's bulk statements on SQLite and PostgreSQL: what differs, what is settled."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from sqlalchemy import event, select

import storage.items
from storage.database import Store
from storage.models import Item
from storage.records import SourceFile

LANGUAGE = "en-IN"


def listed(name: str, version: str = "1", size: int = 10) -> SourceFile:
    return SourceFile(f"/archive/{name}.wav", size, version)


def test_find_unsettled_names_new_changed_and_unfinished_files(store: Store) -> None:
    done, waiting, changed = listed("done"), listed("waiting"), listed("changed")
    with store.unit_of_work() as uow:
        uow.items.register_items([done, waiting, changed], language=LANGUAGE)
        for item in uow.claims.claim_batch(owner="t", language=LANGUAGE, limit=3, lease_s=60):
            if item.source_uri != waiting.uri:
                uow.claims.finish_item(
                    item.id,
                    lease_token=item.lease_token,
                    text="x",
                    duration_ms=1,
                    chunk_count=1,
                    extras={},
                )
            else:
                uow.claims.release_items([item.lease_token or ""])
    now = [done, waiting, listed("changed", version="2"), listed("new")]

    with store.unit_of_work(read_only=True) as uow:
        unsettled = uow.item_queries.find_unsettled(
            now, language=LANGUAGE, settled=("done", "failed")
        )
        other_language = uow.item_queries.find_unsettled(now, language="hi", settled=("done",))

    assert sorted(unsettled) == sorted([waiting.uri, changed.uri, listed("new").uri])
    assert sorted(other_language) == sorted(f.uri for f in now)


def test_registering_twice_inserts_once_and_counts_changes(store: Store) -> None:
    files = [listed(f"f{i:04d}") for i in range(2_500)]  # more than one statement's batch
    with store.unit_of_work() as uow:
        first = uow.items.register_items(files, language=LANGUAGE)
    files[7] = listed("f0007", version="2")
    with store.unit_of_work() as uow:
        second = uow.items.register_items(files, language=LANGUAGE)

    assert (first.new, first.changed, first.unchanged) == (2_500, 0, 0)
    assert (second.new, second.changed, second.unchanged) == (0, 1, 2_499)


def test_a_new_folder_is_inserted_without_a_comparison_first(store: Store) -> None:
    files = [listed(f"new/{i:03d}") for i in range(50)]
    with store.unit_of_work() as uow:
        sent = _statements(store, lambda: uow.items.register_items(files, language=LANGUAGE))

    assert not any("LEFT JOIN items" in statement for statement in sent), sent
    with store.unit_of_work(read_only=True) as uow:
        assert uow.item_queries.pending_count(language=LANGUAGE) == 50


def test_a_batch_wrongly_thought_new_is_still_compared(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The range check is advisory (another run inserting meanwhile, another collation):
    when the insert count says some were there, they are compared as usual."""
    files = [listed(f"f{i:02d}") for i in range(10)]
    with store.unit_of_work() as uow:
        uow.items.register_items(files[:6], language=LANGUAGE)
    monkeypatch.setattr(storage.items, "any_registered", lambda *_, **__: False)
    files[2] = listed("f02", version="2")
    with store.unit_of_work() as uow:
        again = uow.items.register_items(files, language=LANGUAGE)

    assert (again.new, again.changed, again.unchanged) == (4, 1, 5)
    with store.engine.connect() as connection:
        version = connection.scalar(
            select(Item.source_version).where(Item.source_uri == files[2].uri)
        )
    assert version == "2"


def _statements(store: Store, call: Callable[[], object]) -> list[str]:
    sent: list[str] = []

    def record(_conn: object, _cursor: object, statement: str, *_: object) -> None:
        sent.append(statement)

    event.listen(store.engine, "before_cursor_execute", record)
    try:
        call()
    finally:
        event.remove(store.engine, "before_cursor_execute", record)
    return sent
