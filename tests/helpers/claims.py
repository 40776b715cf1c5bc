"""Claimed items and their paid chunk answers, for tests of recording answers."""

from __future__ import annotations

from storage.interface import UnitOfWorkFactory
from storage.records import ItemRecord, SourceFile
from tasks.work.journal import PaidChunk

LANG = "en-IN"
SHA = "a" * 64


def claimed(store: UnitOfWorkFactory, *, count: int = 1, lease_s: float = 60) -> list[ItemRecord]:
    files = [SourceFile(f"/archive/{i}.wav", 10, "v1") for i in range(count)]
    with store.unit_of_work() as uow:
        uow.items.register_items(files, language=LANG)
        items = uow.claims.claim_batch(owner="w", language=LANG, limit=count, lease_s=lease_s)
        for item in items:
            uow.claims.set_fingerprint(
                item.id, sha256=SHA, size_bytes=10, lease_token=item.lease_token
            )
    return items


def paid_for(item: ItemRecord, *, index: int = 0, sha256: str = SHA) -> PaidChunk:
    return PaidChunk(
        item_id=item.id,
        source_uri=item.source_uri,
        sha256=sha256,
        index=index,
        start_ms=0,
        end_ms=1000,
        size_bytes=32_044,
        text="patient stable",
        attempts=1,
        txn_id="t-1",
        latency_ms=5.0,
    )


def done_texts(store: UnitOfWorkFactory, item: ItemRecord) -> dict[int, str | None]:
    with store.unit_of_work(read_only=True) as uow:
        return {i: c.text for i, c in uow.chunks.done_chunks(item.id).items()}
