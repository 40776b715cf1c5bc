"""Concurrent deliverers on a real PostgreSQL: every document is sent exactly once."""

from __future__ import annotations

import threading
from collections import Counter

import pytest

from config.settings import StorageSettings
from storage import open_store
from tasks.delivery.deliverer import DeliveryStats
from tests.tasks.delivery.delivery_helpers import (
    deliver,
    delivery_settings,
    docs_entries,
    make_done,
    sha_of_text,
)

pytestmark = pytest.mark.postgres

DELIVERERS = 3
ITEMS = 60


def test_three_deliverers_at_once_send_each_document_exactly_once(
    devserver_factory, postgres_store_url: str
) -> None:
    server = devserver_factory(latency_ms=10)
    store = open_store(StorageSettings(database_url=postgres_store_url))
    texts = {f"/archive/{i:03d}.wav": f"dictation number {i}" for i in range(ITEMS)}
    make_done(store, texts)
    settings = delivery_settings(server, postgres_store_url)
    results: list[DeliveryStats] = []
    start = threading.Barrier(DELIVERERS)

    def one_deliverer() -> None:
        own = open_store(StorageSettings(database_url=postgres_store_url))
        try:
            start.wait()  # plan and claim at the same moment
            results.append(deliver(settings, own))
        finally:
            own.dispose()

    threads = [threading.Thread(target=one_deliverer) for _ in range(DELIVERERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    sent = Counter(e.sha256 for e in docs_entries(server))
    assert sent == Counter(sha_of_text(t) for t in texts.values())  # each once, none twice
    assert sum(r.delivered for r in results) == ITEMS
    assert sum(r.planned for r in results) == ITEMS  # planned once between them
    assert sum(1 for r in results if r.delivered) >= 2  # the work was really shared
    with store.unit_of_work(read_only=True) as uow:
        assert {c.status: c.rows for c in uow.deliveries.delivery_counts()} == {"delivered": ITEMS}
    again = deliver(settings, store)
    assert (again.planned, again.delivered) == (0, 0)
    assert len(docs_entries(server)) == ITEMS
    store.dispose()
