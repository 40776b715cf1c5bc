"""The in-memory fake implements every method of every storage Protocol.

A Protocol method the fake lacks would only surface when a unit test happens to call
it; this test names the missing ones at once.
"""

from __future__ import annotations

import inspect

import pytest

import storage.audit_interface
import storage.delivery_interface
import storage.interface
import storage.item_interface
import storage.retention_interface
from tests.fakes.store import FakeStore, FakeUnitOfWork, _State

PROTOCOLS = sorted(
    {
        value
        for module in (
            storage.interface,
            storage.item_interface,
            storage.delivery_interface,
            storage.audit_interface,
            storage.retention_interface,
        )
        for value in vars(module).values()
        if inspect.isclass(value)
        and getattr(value, "_is_protocol", False)
        and value.__module__ == module.__name__
    },
    key=lambda protocol: protocol.__name__,
)


def members(protocol: type) -> list[str]:
    """The methods and properties `protocol` declares (typing.get_protocol_members is 3.13+)."""
    return sorted(name for name in vars(protocol) if not name.startswith("_"))


def _fake_of(protocol: type) -> object:
    """The fake object that stands for `protocol`."""
    uow = FakeUnitOfWork(_State())
    fakes: dict[str, object] = {
        "UnitOfWorkFactory": FakeStore(),
        "AuditRepository": uow.audit,
        "RetentionRepository": uow.retention,
        "UnitOfWork": uow,
        "ItemRepository": uow.items,
        "ClaimRepository": uow.claims,
        "ItemQueryRepository": uow.item_queries,
        "ChunkRepository": uow.chunks,
        "DeliveryRepository": uow.deliveries,
        "DeliveryClaimRepository": uow.delivery_claims,
        "RunRepository": uow.runs,
        "ListingRepository": uow.listings,
        "ReviewRepository": uow.reviews,
        "SpendRepository": uow.spend,
    }
    return fakes[protocol.__name__]


def test_every_protocol_of_the_store_is_found() -> None:
    assert [p.__name__ for p in PROTOCOLS] == [
        "AuditRepository", "ChunkRepository", "ClaimRepository", "DeliveryClaimRepository",
        "DeliveryRepository",
        "ItemQueryRepository", "ItemRepository", "ListingRepository", "RetentionRepository",
        "ReviewRepository", "RunRepository", "SpendRepository", "UnitOfWork",
        "UnitOfWorkFactory",
    ]  # fmt: skip


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=lambda p: p.__name__)
def test_the_fake_has_every_method_of_the_protocol(protocol: type) -> None:
    fake = _fake_of(protocol)
    missing = sorted(name for name in members(protocol) if not hasattr(fake, name))
    assert missing == [], f"{type(fake).__name__} lacks {missing}"


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=lambda p: p.__name__)
def test_the_fake_takes_the_arguments_of_the_protocol(protocol: type) -> None:
    fake = _fake_of(protocol)
    for name in sorted(members(protocol)):
        wanted = getattr(protocol, name)
        if not callable(wanted) or not hasattr(fake, name):
            continue  # properties; a missing method is the test above's
        expected = list(inspect.signature(wanted).parameters)[1:]  # without self
        got = list(inspect.signature(getattr(fake, name)).parameters)
        assert got == expected, f"{type(fake).__name__}.{name}"
