"""A delivery whose failure the store cannot record ends the run only once the other
deliveries in flight have ended: their answers are recorded, not cut off mid-send.

The deliveries of a batch share the run's claims and sender; raising the first error
at once left the others sending while the batch gave their claims back and the run
closed, so a document the receiver took was left marked as sending (in doubt for a
person to check) instead of delivered.
"""

from __future__ import annotations

import asyncio

import pytest

from storage.errors import StoreUnavailable
from storage.interface import UnitOfWorkFactory
from tasks.delivery import delivery_run
from tests.tasks.delivery.delivery_helpers import (
    deliver,
    delivery_settings,
    docs_entries,
    make_done,
    rows_of,
)


def test_a_failure_the_store_cannot_record_waits_for_the_deliveries_in_flight(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = devserver_factory(latency_ms=1500)  # the other upload is in flight meanwhile
    items = make_done(store, {"/archive/a.wav": "alpha", "/archive/b.wav": "beta"})
    broken = items["/archive/b.wav"].id
    send = delivery_run.DeliveryRun._send

    async def send_or_fail(self: delivery_run.DeliveryRun, row: object) -> object:
        if row.item_id == broken:  # type: ignore[attr-defined]
            await asyncio.sleep(0.3)  # the other one is sending by now
            raise StoreUnavailable("database unavailable: OperationalError: database is locked")
        return await send(self, row)  # type: ignore[arg-type]

    async def store_down(*_args: object, **_kwargs: object) -> None:
        raise StoreUnavailable("database unavailable: OperationalError: database is locked")

    monkeypatch.setattr(delivery_run.DeliveryRun, "_send", send_or_fail)
    monkeypatch.setattr(delivery_run.DeliveryRun, "_settle_failed", store_down)

    with pytest.raises(StoreUnavailable):
        deliver(delivery_settings(server, sqlite_url), store)

    (sent,) = rows_of(store, items["/archive/a.wav"])
    (kept,) = rows_of(store, items["/archive/b.wav"])
    assert (sent.status, kept.status, len(docs_entries(server))) == ("delivered", "pending", 1)
    assert sent.status == "delivered"  # its answer came and was recorded
    assert kept.status == "pending"  # given back: the next run delivers it
