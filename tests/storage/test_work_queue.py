"""The one work queue, the same scenarios on both kinds of work: items and deliveries.

Kill (a holder that has ended is taken back at once), lease expiry (another worker takes
over, the late one gets LeaseLost), renewal (a held lease is extended on the store's
clock; a lost one is reported), on SQLite and on PostgreSQL. Deliveries add the doubt
rule: a row whose request went out is taken back as in_doubt, never pending.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from config.settings import StorageSettings
from storage import open_store
from storage.errors import LeaseLost
from storage.interface import UnitOfWork, UnitOfWorkFactory
from storage.owners import local_host_id
from storage.records import SourceFile, WantedDelivery

LANG = "en-IN"
PAST = datetime.now(UTC) - timedelta(hours=1)


@dataclass(frozen=True)
class Kind:
    """One kind of work on the queue, seen through the same five verbs."""

    name: str
    claim: Callable[..., Sequence[Any]]
    renew: Callable[[UnitOfWork, list[str]], frozenset[str]]
    settle: Callable[[UnitOfWork, Any], None]
    take_back_dead: Callable[[UnitOfWork], int]
    status: Callable[[UnitOfWork, int], str]


def _items(store: UnitOfWorkFactory) -> None:
    with store.unit_of_work() as uow:
        uow.items.register_items([SourceFile("/a/one.wav", 10, "v1")], language=LANG)


def _deliveries(store: UnitOfWorkFactory) -> None:
    _items(store)
    with store.unit_of_work() as uow:
        (item,) = uow.claims.claim_batch(owner="w", language=LANG, limit=1, lease_s=60)
        uow.claims.finish_item(
            item.id,
            lease_token=item.lease_token,
            text="t",
            duration_ms=1,
            chunk_count=1,
            extras={},
        )
        wanted = [WantedDelivery(item_id=item.id, language=LANG, version="v" * 64)]
        uow.deliveries.plan_deliveries(wanted, format_name="txt")


ITEMS = Kind(
    name="items",
    claim=lambda uow, **kw: uow.claims.claim_batch(language=LANG, limit=1, **kw),
    renew=lambda uow, tokens: uow.claims.renew_leases(tokens, lease_s=60),
    settle=lambda uow, row: uow.claims.skip_item(
        row.id, lease_token=row.lease_token, reason_kind="silent_audio", reason="x"
    ),
    take_back_dead=lambda uow: uow.claims.release_dead_local_leases(),
    status=lambda uow, row_id: uow.item_queries.get_item(row_id).status,
)
DELIVERIES = Kind(
    name="deliveries",
    claim=lambda uow, **kw: uow.delivery_claims.claim_deliveries(language=LANG, limit=1, **kw),
    renew=lambda uow, tokens: uow.delivery_claims.renew_deliveries(tokens, lease_s=60),
    settle=lambda uow, row: uow.delivery_claims.record_delivered(
        row.id, lease_token=row.lease_token, response={}
    ),
    take_back_dead=lambda uow: uow.delivery_claims.release_dead_local_deliveries(),
    status=lambda uow, row_id: uow.deliveries.get_delivery(row_id).status,
)
MAKERS = {"items": _items, "deliveries": _deliveries}


@pytest.fixture(params=[ITEMS, DELIVERIES], ids=lambda kind: kind.name)
def kind(request: pytest.FixtureRequest, store: UnitOfWorkFactory) -> Kind:
    MAKERS[request.param.name](store)
    return request.param


@pytest.fixture
def dead_owner() -> str:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return f"{local_host_id()}:{child.pid}:0123abcd"


def status_of(store: UnitOfWorkFactory, kind: Kind, row_id: int) -> str:
    with store.unit_of_work(read_only=True) as uow:
        return kind.status(uow, row_id)


def test_a_killed_holder_is_taken_back_at_once(
    store: UnitOfWorkFactory, kind: Kind, dead_owner: str
) -> None:
    with store.unit_of_work() as uow:
        (row,) = kind.claim(uow, owner=dead_owner, lease_s=900)
    with store.unit_of_work() as uow:
        assert kind.take_back_dead(uow) == 1
    assert status_of(store, kind, row.id) == "pending"
    with store.unit_of_work() as uow:
        (again,) = kind.claim(uow, owner="next", lease_s=60)
    assert (again.id, again.attempts) == (row.id, 2)
    with pytest.raises(LeaseLost), store.unit_of_work() as uow:  # the dead claim is void
        kind.settle(uow, row)


def test_an_expired_lease_goes_to_another_worker_and_the_late_one_loses(
    store: UnitOfWorkFactory, kind: Kind
) -> None:
    with store.unit_of_work() as uow:
        (late,) = kind.claim(uow, owner="w1", lease_s=5, now=PAST)
    with store.unit_of_work() as uow:
        assert list(kind.claim(uow, owner="w1", lease_s=60)) == []  # its own: left alone
        (taken,) = kind.claim(uow, owner="w2", lease_s=60)
    assert taken.id == late.id
    assert taken.lease_token != late.lease_token
    with pytest.raises(LeaseLost), store.unit_of_work() as uow:
        kind.settle(uow, late)
    with store.unit_of_work() as uow:
        kind.settle(uow, taken)


@pytest.mark.postgres
@pytest.mark.parametrize("skewed_kind", [ITEMS, DELIVERIES], ids=lambda kind: kind.name)
def test_a_claimer_with_a_clock_an_hour_ahead_leaves_a_live_lease_alone(
    postgres_store_url: str, host_clock_an_hour_ahead: None, skewed_kind: Kind
) -> None:
    store = open_store(StorageSettings(database_url=postgres_store_url))
    try:
        MAKERS[skewed_kind.name](store)
        with store.unit_of_work() as uow:  # a healthy worker's claim: live for 10 minutes
            (live,) = skewed_kind.claim(uow, owner="healthy", lease_s=600, now=datetime.now(UTC))
        with store.unit_of_work() as uow:  # expiry is judged on the store's clock
            assert list(skewed_kind.claim(uow, owner="skewed", lease_s=600)) == []
        assert status_of(store, skewed_kind, live.id) == "processing"
    finally:
        store.dispose()


def test_renewal_keeps_a_held_lease_and_reports_a_lost_one(
    store: UnitOfWorkFactory, kind: Kind
) -> None:
    with store.unit_of_work() as uow:
        (held,) = kind.claim(uow, owner="w1", lease_s=5, now=PAST)
    with store.unit_of_work() as uow:  # lapsed, but no one took it: still ours
        assert kind.renew(uow, [held.lease_token]) == frozenset()
    with store.unit_of_work() as uow:  # renewed on the store's clock: not claimable now
        assert list(kind.claim(uow, owner="w2", lease_s=60)) == []
    with store.unit_of_work() as uow:
        (taken,) = kind.claim(
            uow, owner="w2", lease_s=60, now=datetime.now(UTC) + timedelta(hours=1)
        )
    with store.unit_of_work() as uow:
        assert kind.renew(uow, [held.lease_token, taken.lease_token]) == {held.lease_token}


@pytest.mark.parametrize("ending", ["killed", "expired", "released"])
def test_a_delivery_whose_request_went_out_is_in_doubt_never_pending(
    store: UnitOfWorkFactory, dead_owner: str, ending: str
) -> None:
    _deliveries(store)
    owner, now = (dead_owner, None) if ending == "killed" else ("w1", PAST)
    with store.unit_of_work() as uow:
        (row,) = uow.delivery_claims.claim_deliveries(
            owner=owner, language=LANG, limit=1, lease_s=5, now=now
        )
        uow.delivery_claims.mark_sending(row.id, lease_token=row.lease_token)
    with store.unit_of_work() as uow:
        if ending == "killed":
            assert uow.delivery_claims.release_dead_local_deliveries() == 1
        elif ending == "released":
            uow.delivery_claims.release_deliveries([row.lease_token or ""])
        assert (
            uow.delivery_claims.claim_deliveries(owner="w2", language=LANG, limit=1, lease_s=60)
            == []
        )
    assert status_of(store, DELIVERIES, row.id) == "in_doubt"
    with store.unit_of_work() as uow:  # a person's word sends it again
        assert uow.deliveries.resend_in_doubt() == 1
        (again,) = uow.delivery_claims.claim_deliveries(
            owner="w2", language=LANG, limit=1, lease_s=60
        )
    assert again.id == row.id
    assert again.sending_at is None
