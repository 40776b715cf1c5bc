"""Each claim has its own token; lapsed leases of a live owner stay with it; the store's clock.

On SQLite and PostgreSQL alike, except the skewed-clock case, which only a server store
can answer (SQLite is a file on one host: its clock is that host's, see docs/operations.md).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import inspect

from config.settings import StorageSettings
from storage import open_store
from storage.database import (
    _alembic_config,
    create_store_engine,
    downgrade_database,
    upgrade_database,
)
from storage.errors import LeaseLost
from storage.interface import UnitOfWorkFactory
from tests.storage.repository_helpers import claim, get, listed, record, register


def test_every_claim_gets_its_own_token(store: UnitOfWorkFactory) -> None:
    register(store, listed(3))
    items = claim(store, owner="w1", limit=3)
    tokens = [i.lease_token for i in items]
    assert all(tokens)
    assert len(set(tokens)) == 3
    assert [get(store, i.id).lease_token for i in items] == tokens


def test_the_same_owner_cannot_write_under_an_earlier_claim(store: UnitOfWorkFactory) -> None:
    """One process, two batch loops: the owner name is the same, the claims are not."""
    register(store, listed(1))
    an_hour_ago = datetime.now(UTC) - timedelta(hours=1)
    [first] = claim(store, owner="w1", lease_s=5, now=an_hour_ago)
    [second] = claim(store, owner="w2", lease_s=60)  # the lapsed lease is taken over
    assert second.lease_token != first.lease_token
    with pytest.raises(LeaseLost):
        record(store, first, 0, "late answer")
    with store.unit_of_work() as uow:
        assert uow.claims.renew_leases([first.lease_token or ""], lease_s=60) == {first.lease_token}
    record(store, second, 0, "answer")


def test_a_lapsed_lease_is_not_claimed_back_by_its_own_owner(store: UnitOfWorkFactory) -> None:
    """The owner may still be working on it: another loop of that process must not take it."""
    register(store, listed(2))
    an_hour_ago = datetime.now(UTC) - timedelta(hours=1)
    [lapsed] = claim(store, owner="w1", limit=1, lease_s=5, now=an_hour_ago)
    again = claim(store, owner="w1", limit=2)
    assert [i.id for i in again] == [lapsed.id + 1]  # the pending one only
    assert get(store, lapsed.id).lease_token == lapsed.lease_token
    taken = claim(store, owner="w2", limit=2)  # another owner may take the lapsed one
    assert [i.id for i in taken] == [lapsed.id]


def test_release_and_settle_clear_the_token(store: UnitOfWorkFactory) -> None:
    register(store, listed(1))
    [item] = claim(store)
    with store.unit_of_work() as uow:
        uow.claims.release_items([item.lease_token or ""])
    released = get(store, item.id)
    assert (released.status, released.lease_token, released.lease_owner) == ("pending", None, None)


@pytest.mark.postgres
def test_a_claimer_with_a_clock_an_hour_ahead_cannot_take_a_live_lease(
    postgres_store_url: str, host_clock_an_hour_ahead: None
) -> None:
    store = open_store(StorageSettings(database_url=postgres_store_url))
    try:
        register(store, listed(2))
        with store.unit_of_work() as uow:  # a healthy worker's claim: live for 10 minutes
            [live] = uow.claims.claim_batch(
                owner="healthy",
                language="en-IN",
                limit=1,
                lease_s=600,
                now=datetime.now(UTC),
            )
        taken = claim(store, owner="skewed", limit=2, lease_s=600)
        assert [i.id for i in taken] == [live.id + 1]  # only the pending one
        assert get(store, live.id).lease_token == live.lease_token
        with store.unit_of_work() as uow:  # renewals too are timed by the server
            assert uow.claims.renew_leases([taken[0].lease_token or ""], lease_s=600) == frozenset()
        expires = get(store, taken[0].id).lease_expires_at
        assert expires is not None
        assert expires < datetime.now(UTC) + timedelta(minutes=11)  # not the skewed hour on
    finally:
        store.dispose()


def _item_columns(url: str) -> set[str]:
    engine = create_store_engine(url)
    try:
        return {c["name"] for c in inspect(engine).get_columns("items")}
    finally:
        engine.dispose()


def test_revision_0002_adds_and_drops_the_token_column(store_url: str) -> None:
    before = str(ScriptDirectory.from_config(_alembic_config()).get_revision("0002").down_revision)
    assert upgrade_database(store_url, revision=before) == before
    assert "lease_token" not in _item_columns(store_url)
    assert upgrade_database(store_url, revision="0002") == "0002"
    assert "lease_token" in _item_columns(store_url)
    assert downgrade_database(store_url, revision=before) == before
    assert "lease_token" not in _item_columns(store_url)
    upgrade_database(store_url, revision="0002")
    assert "lease_token" in _item_columns(store_url)
