"""The in-memory fake (tests/fakes/store.py) and the real Repository answer alike.

One small scenario of a file's life (register, claim, fingerprint, chunks, settle, renew,
release, re-list, journal recovery, rollback) runs against the fake and against the SQL
store (SQLite, and PostgreSQL where available); the observations must be equal, so the
unit tier's fake cannot drift from the store it stands in for.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from storage.errors import LeaseLost
from storage.interface import UnitOfWorkFactory
from storage.records import ItemRecord, SourceFile
from tests.fakes.store import FakeStore

LANG = "en-IN"
X, Y, Z = "1" * 64, "2" * 64, "3" * 64
LISTING = [SourceFile(f"/archive/{name}.wav", 100, "v1") for name in "abc"]


def seen(item: ItemRecord | None) -> tuple[Any, ...] | None:
    """What both stores must agree on (ids, tokens and times differ by design)."""
    if item is None:
        return None
    return (
        item.source_uri.rsplit("/", 1)[-1],
        item.status,
        item.sha256,
        item.text,
        item.attempts,
        item.error_kind,
        item.retryable,
        item.chunk_count,
        item.lease_token is not None,
    )


def chunk(uow: Any, item: ItemRecord, index: int, *, status: str = "done") -> None:
    uow.chunks.record_chunk_result(
        item.id,
        lease_token=item.lease_token,
        index=index,
        start_ms=index * 1000,
        end_ms=index * 1000 + 1000,
        size_bytes=32_044,
        text="" if status == "silent" else f"part {index}",
        status=status,
    )


def reset_then_fail(store: UnitOfWorkFactory, item_id: int) -> None:
    with store.unit_of_work() as uow:
        uow.chunks.reset_chunks(item_id)
        raise RuntimeError("rolled back")


def scenario(store: UnitOfWorkFactory) -> list[object]:
    seen_: list[object] = []
    with store.unit_of_work() as uow:
        seen_.append(uow.items.register_items(LISTING, language=LANG))
        a, b = uow.items.claim_batch(owner="w1", language=LANG, limit=2, lease_s=60)
        seen_ += [seen(a), seen(b)]
    with store.unit_of_work() as uow:
        uow.items.set_fingerprint(a.id, sha256=X, size_bytes=100, lease_token=a.lease_token)
        chunk(uow, a, 0)
        chunk(uow, a, 1, status="silent")
    with store.unit_of_work(read_only=True) as uow:
        finished = uow.chunks.done_chunks(a.id)
        seen_.append(sorted((i, c.status, c.text, c.start_ms) for i, c in finished.items()))
        seen_.append(seen(uow.items.find_done_with_sha(sha256=X, language=LANG)))
    with store.unit_of_work() as uow:
        uow.items.finish_item(
            a.id, lease_token=a.lease_token, text="part 0", duration_ms=2000, chunk_count=2,
            extras={},
        )  # fmt: skip
        seen_.append(seen(uow.items.find_done_with_sha(sha256=X, language=LANG)))
        uow.items.set_fingerprint(b.id, sha256=Y, size_bytes=100, lease_token=b.lease_token)
        chunk(uow, b, 0)
    with store.unit_of_work() as uow:  # b's content changed: its old answers are void
        uow.items.set_fingerprint(b.id, sha256=Z, size_bytes=100, lease_token=b.lease_token)
        seen_.append(uow.chunks.done_chunks(b.id))
    with pytest.raises(LeaseLost), store.unit_of_work() as uow:
        uow.items.finish_item(
            b.id, lease_token="stale", text="", duration_ms=0, chunk_count=0, extras={}
        )
    with store.unit_of_work() as uow:
        assert a.lease_token is not None
        assert b.lease_token is not None
        lost = uow.items.renew_leases([a.lease_token, b.lease_token, "gone"], lease_s=60)
        seen_.append(sorted({a.lease_token: "a", b.lease_token: "b"}.get(t, t) for t in lost))
        uow.items.release_items([b.lease_token])
        seen_.append(seen(uow.items.get_item(b.id)))
    with store.unit_of_work() as uow:
        again = uow.items.claim_batch(owner="w2", language=LANG, limit=5, lease_s=60)
        seen_.append([seen(item) for item in again])
        b2, c = again
        uow.items.skip_item(
            b2.id, lease_token=b2.lease_token, reason_kind="silent_audio", reason="no"
        )
        uow.items.fail_item(
            c.id, lease_token=c.lease_token, error_kind="corrupt_audio", message="bad",
            retryable=True, next_attempt_at=datetime(2030, 1, 1, tzinfo=UTC),
        )  # fmt: skip
    with store.unit_of_work() as uow:
        piece = {"index": 3, "start_ms": 0, "end_ms": 1, "size_bytes": 1, "text": "t",
                 "attempts": 1, "txn_id": None, "latency_ms": None}  # fmt: skip
        seen_.append(
            [
                uow.chunks.record_recovered_chunk(a.id, source_uri=a.source_uri, sha256=X, **piece),
                uow.chunks.record_recovered_chunk(b.id, source_uri=b.source_uri, sha256=Z, **piece),
                uow.chunks.record_recovered_chunk(b.id, source_uri=b.source_uri, sha256=Y, **piece),
            ]
        )
    with pytest.raises(RuntimeError):
        reset_then_fail(store, b.id)
    with store.unit_of_work() as uow:
        seen_.append(sorted(uow.chunks.done_chunks(b.id)))
        relisted = [SourceFile(LISTING[0].uri, 100, "v2"), *LISTING[1:]]
        seen_.append(uow.items.register_items(relisted, language=LANG))
        found = uow.items.find_items(source_uris=[f.uri for f in LISTING], language=LANG)
        seen_.append(sorted(seen(item) for item in found.values()))  # type: ignore[type-var]
    return seen_


def test_the_fake_answers_like_the_sql_store(store: UnitOfWorkFactory) -> None:
    real = scenario(store)
    fake = scenario(FakeStore())

    assert fake == real
    # The story is the one told above, not two equal mistakes.
    assert real[0].new == 3  # type: ignore[attr-defined]
    assert real[3] == [(0, "done", "part 0", 0), (1, "silent", "", 1000)]
    assert real[4] is None
    assert real[5] is not None
    assert real[6] == {}
    assert real[7] == ["a", "gone"]
    assert real[8] == ("b.wav", "pending", Z, None, 0, None, False, None, False)
    assert real[10] == [False, True, False]
    assert real[12].changed == 1  # type: ignore[attr-defined]
