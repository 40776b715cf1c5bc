"""Helpers shared by the repository suites (test_repository_*.py)."""

from __future__ import annotations

from datetime import datetime

from storage.interface import UnitOfWorkFactory
from storage.records import ItemRecord
from storage.sources import SourceFile

LANG = "en-IN"


def listed(count: int, *, version: str = "v1", prefix: str = "/archive") -> list[SourceFile]:
    return [SourceFile(f"{prefix}/file-{i:05d}.wav", 1000 + i, version) for i in range(count)]


def register(store: UnitOfWorkFactory, files: list[SourceFile], language: str = LANG) -> None:
    with store.unit_of_work() as uow:
        uow.items.register_items(files, language=language)


def claim(
    store: UnitOfWorkFactory, owner: str = "w1", limit: int = 10, **kwargs
) -> list[ItemRecord]:
    kwargs.setdefault("language", LANG)
    kwargs.setdefault("lease_s", 60)
    with store.unit_of_work() as uow:
        return uow.claims.claim_batch(owner=owner, limit=limit, **kwargs)


def get(store: UnitOfWorkFactory, item_id: int) -> ItemRecord:
    with store.unit_of_work(read_only=True) as uow:
        item = uow.item_queries.get_item(item_id)
    assert item is not None
    return item


def finish(store: UnitOfWorkFactory, item: ItemRecord, text: str = "hello") -> None:
    """Finish the item under the claim that returned `item`."""
    with store.unit_of_work() as uow:
        uow.claims.finish_item(
            item.id,
            lease_token=item.lease_token,
            text=text,
            duration_ms=1500,
            chunk_count=1,
            extras={},
        )


def record(
    store: UnitOfWorkFactory, item: ItemRecord, index: int, text: str, status: str = "done"
) -> None:
    """Record a chunk under the claim that returned `item`."""
    with store.unit_of_work() as uow:
        uow.chunks.record_chunk_result(
            item.id,
            lease_token=item.lease_token,
            index=index,
            start_ms=index * 1000,
            end_ms=(index + 1) * 1000,
            size_bytes=32_044,
            text=text,
            status=status,
            txn_id=f"txn-{index}",
            latency_ms=12.5,
        )


def fail(
    store: UnitOfWorkFactory, item: ItemRecord, *, retryable: bool, at: datetime | None
) -> None:
    with store.unit_of_work() as uow:
        uow.claims.fail_item(
            item.id,
            lease_token=item.lease_token,
            error_kind="service_unavailable" if retryable else "request_rejected",
            message="503 from the service" if retryable else "400 from the service",
            retryable=retryable,
            next_attempt_at=at,
        )
