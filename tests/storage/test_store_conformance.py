"""The SQL stores answer alike, every Protocol: SQLite, and PostgreSQL where available.

Small scenarios (a file's life: register, claim, fingerprint, chunks, settle, renew,
release, re-list, journal recovery, rollback; runs, reviews and the delivery queue;
unreadable files, listed folders and the export) run on `store` and on an SQLite store
beside it; the observations must be equal, so the backends cannot drift apart, and the
assertions after it check that the story is the one told, not two equal mistakes.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from storage.errors import LeaseLost, NotUnderReview
from storage.interface import UnitOfWorkFactory
from storage.records import ItemRecord, SkippedFile, SourceFile, WantedDelivery

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
        a, b = uow.claims.claim_batch(owner="w1", language=LANG, limit=2, lease_s=60)
        seen_ += [seen(a), seen(b)]
    with store.unit_of_work() as uow:
        uow.claims.set_fingerprint(a.id, sha256=X, size_bytes=100, lease_token=a.lease_token)
        chunk(uow, a, 0)
        chunk(uow, a, 1, status="silent")
    with store.unit_of_work(read_only=True) as uow:
        finished = uow.chunks.done_chunks(a.id)
        seen_.append(sorted((i, c.status, c.text, c.start_ms) for i, c in finished.items()))
        seen_.append(seen(uow.item_queries.find_done_with_sha(sha256=X, language=LANG)))
    with store.unit_of_work() as uow:
        uow.claims.finish_item(
            a.id, lease_token=a.lease_token, text="part 0", duration_ms=2000, chunk_count=2,
            extras={},
        )  # fmt: skip
        seen_.append(seen(uow.item_queries.find_done_with_sha(sha256=X, language=LANG)))
        uow.claims.set_fingerprint(b.id, sha256=Y, size_bytes=100, lease_token=b.lease_token)
        chunk(uow, b, 0)
    with store.unit_of_work() as uow:  # b's content changed: its old answers are void
        uow.claims.set_fingerprint(b.id, sha256=Z, size_bytes=100, lease_token=b.lease_token)
        seen_.append(uow.chunks.done_chunks(b.id))
    with pytest.raises(LeaseLost), store.unit_of_work() as uow:
        uow.claims.finish_item(
            b.id, lease_token="stale", text="", duration_ms=0, chunk_count=0, extras={}
        )
    with store.unit_of_work() as uow:
        assert a.lease_token is not None
        assert b.lease_token is not None
        lost = uow.claims.renew_leases([a.lease_token, b.lease_token, "gone"], lease_s=60)
        seen_.append(sorted({a.lease_token: "a", b.lease_token: "b"}.get(t, t) for t in lost))
        uow.claims.release_items([b.lease_token])
        seen_.append(seen(uow.item_queries.get_item(b.id)))
    with store.unit_of_work() as uow:
        again = uow.claims.claim_batch(owner="w2", language=LANG, limit=5, lease_s=60)
        seen_.append([seen(item) for item in again])
        b2, c = again
        uow.claims.skip_item(
            b2.id, lease_token=b2.lease_token, reason_kind="silent_audio", reason="no"
        )
        uow.claims.fail_item(
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
        found = uow.item_queries.find_items(source_uris=[f.uri for f in LISTING], language=LANG)
        seen_.append(sorted(seen(item) for item in found.values()))  # type: ignore[type-var]
    return seen_


def test_a_files_life_reads_alike_on_every_sql_store(
    store: UnitOfWorkFactory, sqlite_reference: UnitOfWorkFactory
) -> None:
    real = scenario(store)

    assert real == scenario(sqlite_reference)
    # The story is the one told above, not two equal mistakes.
    assert real[0].new == 3  # type: ignore[attr-defined]
    assert real[3] == [(0, "done", "part 0", 0), (1, "silent", "", 1000)]
    assert real[4] is None
    assert real[5] is not None
    assert real[6] == {}
    assert real[7] == ["a", "gone"]
    assert real[8] == ("b.wav", "pending", Z, None, 0, None, False, None, False)
    held = ("processing", None, None, 1, None, False, None, True)  # claimed, not yet read
    assert real[1:3] == [("a.wav", *held), ("b.wav", *held)]
    claimed_again = [(s[0], s[1], s[2], s[4], s[8]) for s in real[9]]  # type: ignore[attr-defined]
    assert claimed_again == [
        ("b.wav", "processing", Z, 1, True),
        ("c.wav", "processing", None, 1, True),
    ]
    assert real[10] == [False, True, False]
    assert real[11] == [3]  # the rolled-back reset kept b's recovered chunk
    assert real[12].changed == 1  # type: ignore[attr-defined]
    settled = [(s[0], s[1], s[4], s[5], s[6]) for s in real[13]]  # type: ignore[attr-defined]
    assert settled == [
        ("a.wav", "pending", 0, None, False),  # listed again as changed: to do again
        ("b.wav", "skipped", 1, "silent_audio", False),
        ("c.wav", "failed", 1, "corrupt_audio", True),
    ]


def _done(uow: Any, item: ItemRecord, text: str, *, flags: tuple[str, ...] = ()) -> None:
    uow.claims.set_fingerprint(item.id, sha256=X, size_bytes=100, lease_token=item.lease_token)
    uow.claims.finish_item(
        item.id, lease_token=item.lease_token, text=text, duration_ms=1000, chunk_count=1,
        extras={}, flags=flags,
    )  # fmt: skip


def row_seen(row: Any) -> tuple[Any, ...] | None:
    """What both stores must agree on for a delivery row."""
    if row is None:
        return None
    return (row.version[:1], row.status, row.attempts, row.error_kind, row.target,
            row.lease_token is not None, row.sending_at is not None, row.remote_id)  # fmt: skip


def ledger_scenario(store: UnitOfWorkFactory) -> list[object]:
    """Items' reading verbs, runs, reviews and the delivery queue, one story."""
    seen_: list[object] = []
    with store.unit_of_work() as uow:
        run_id = uow.runs.start_run(source="/archive", language=LANG)
        uow.items.register_items(LISTING, language=LANG)
        a, b, c = uow.claims.claim_batch(owner="w1", language=LANG, limit=3, lease_s=60)
        _done(uow, a, "alpha")
        _done(uow, b, "bravo", flags=("too_few_words",))
        uow.claims.fail_item(
            c.id, lease_token=c.lease_token, error_kind="corrupt_audio", message="bad",
            retryable=True, next_attempt_at=None,
        )  # fmt: skip
        uow.runs.finish_run(run_id, counts={"done": 1, "failed": 1}, status="some_failed")
    with store.unit_of_work() as uow:
        seen_.append([(r.source, r.status, r.counts["done"]) for r in uow.runs.latest_runs()])
        seen_.append(uow.runs.run_sources())
        seen_.append(sorted((s.status, s.items) for s in uow.item_queries.status_counts()))
        seen_.append([seen(i) for i in uow.item_queries.list_failures()])
        seen_.append([seen(i) for i in uow.reviews.list_needs_review(language=LANG)])
        seen_.append(seen(uow.reviews.accept_review(b.id)))
        seen_.append(uow.items.set_item_metadata({a.source_uri: {"mrn": "1"}}, language=LANG))
        seen_.append(uow.item_queries.find_item(source_uri=a.source_uri, language=LANG).metadata)  # type: ignore[union-attr]
        seen_.append(
            [seen(i) for i in uow.item_queries.done_items_page(language=LANG, after_id=0, limit=9)]
        )
        seen_.append(
            uow.items.requeue_failures(language=LANG, max_attempts=5, include_permanent=False)
        )
        seen_.append(uow.item_queries.pending_count(language=LANG))
        seen_.append(sorted(u.rsplit("/", 1)[-1] for u in uow.item_queries.source_uris()))
    with store.unit_of_work() as uow:
        wanted = [WantedDelivery(item_id=i.id, language=LANG, version=v * 64)
                  for i, v in ((a, "1"), (b, "2"))]  # fmt: skip
        seen_.append(uow.deliveries.plan_deliveries(wanted, format_name="txt"))
        seen_.append(uow.deliveries.plan_deliveries(wanted, format_name="txt"))  # nothing new
        first, second = uow.delivery_claims.claim_deliveries(
            owner="w1", language=LANG, limit=5, lease_s=60
        )
        seen_ += [row_seen(first), row_seen(second)]
    with store.unit_of_work() as uow:
        uow.delivery_claims.mark_sending(first.id, lease_token=first.lease_token)
        uow.delivery_claims.mark_sending(second.id, lease_token=second.lease_token)
        lost = uow.delivery_claims.renew_deliveries([first.lease_token or "", "gone"], lease_s=60)
        seen_.append(sorted(lost))
        uow.delivery_claims.record_delivered(
            first.id, lease_token=first.lease_token, response={"document_id": "d1"}, remote_id="d1"
        )
        uow.delivery_claims.release_deliveries([second.lease_token or ""])  # sent: in doubt
    with pytest.raises(LeaseLost), store.unit_of_work() as uow:
        uow.delivery_claims.record_delivered(first.id, lease_token=first.lease_token, response={})
    with store.unit_of_work() as uow:
        seen_ += [row_seen(uow.deliveries.get_delivery(r.id)) for r in (first, second)]
        seen_.append(
            uow.delivery_claims.claim_deliveries(owner="w2", language=LANG, limit=5, lease_s=60)
        )
        seen_.append(sorted((n.status, n.rows) for n in uow.deliveries.delivery_counts()))
        seen_.append(uow.deliveries.resend_in_doubt(language=LANG))
        (again,) = uow.delivery_claims.claim_deliveries(
            owner="w2", language=LANG, limit=5, lease_s=60
        )
        seen_.append(row_seen(again))
        uow.delivery_claims.record_delivery_failed(
            again.id, lease_token=again.lease_token, error_kind="rejected", message="no",
            retryable=True,
        )  # fmt: skip
        seen_.append(uow.deliveries.requeue_delivery_failures(max_attempts=5))
        seen_.append(uow.delivery_claims.record_recovered_delivery(
            again.id, version=again.version, response={}, remote_id="d2"))  # fmt: skip
        seen_.append(uow.delivery_claims.record_recovered_delivery(
            again.id, version=again.version, response={}, remote_id="d2"))  # fmt: skip
        delivered = uow.deliveries.delivered_versions([a.id, b.id])
        seen_.append(delivered == {a.id: ["1" * 64], b.id: ["2" * 64]})
        seen_.append([row_seen(r) for r in uow.deliveries.deliveries_of_item(b.id)])
        filings = uow.deliveries.delivered_filings([a.id, b.id])
        seen_.append(filings == {a.id: [("1" * 64, 0)], b.id: [("2" * 64, 0)]})
    with pytest.raises(NotUnderReview), store.unit_of_work() as uow:
        uow.reviews.resend_review(b.id)  # accepted: no longer under review
    return seen_


def test_runs_reviews_and_the_delivery_queue_answer_alike(
    store: UnitOfWorkFactory, sqlite_reference: UnitOfWorkFactory
) -> None:
    real = ledger_scenario(store)

    assert real == ledger_scenario(sqlite_reference)
    assert real[0:2] == [[("/archive", "some_failed", 1)], ["/archive"]]
    assert real[2] == [("done", 1), ("failed", 1), ("needs_review", 1)]
    assert [s[0] for s in real[4]] == ["b.wav"]  # type: ignore[attr-defined]
    assert real[5][1] == "done"  # type: ignore[index]
    assert real[6:8] == [1, {"mrn": "1"}]
    assert real[9:12] == [1, 1, ["a.wav", "b.wav", "c.wav"]]  # c requeued, then pending
    assert real[-1] is True  # delivered_filings: (version, filing) per item
    assert real[12:14] == [2, 0]  # two versions planned, then none
    assert real[16] == ["gone"]
    assert real[17] == ("1", "delivered", 1, None, "docs", False, True, "d1")
    assert real[18] == ("2", "in_doubt", 0, None, "docs", False, True, None)
    assert real[19] == []  # in doubt: never claimed blindly
    assert real[20] == [("delivered", 1), ("in_doubt", 1)]
    assert real[14:16] == [("1", "processing", 1, None, "docs", True, False, None),
                           ("2", "processing", 1, None, "docs", True, False, None)]  # fmt: skip
    assert real[21:24] == [1, ("2", "processing", 1, None, "docs", True, False, None), 1]
    assert real[24:26] == [True, False]  # a journaled answer is recorded once
    assert real[26:28] == [True, [("2", "delivered", 1, None, "docs", False, False, "d2")]]


def export_seen(row: Any) -> tuple[Any, ...]:
    """An exported row without its time (times differ by design)."""
    names = ("source", "language", "status", "text", "error_kind", "error_message",
             "duration_ms", "chunks", "attempts", "sha256", "flags", "metadata")  # fmt: skip
    return tuple(getattr(row, name) for name in names)


def listing_scenario(store: UnitOfWorkFactory) -> list[object]:
    """What cannot be read, folders listed again, a dry run's question, the export."""
    seen_: list[object] = []
    d, e, locked, old = (f"/archive/{n}" for n in ("d.wav", "e.wav", "locked", "old"))
    with store.unit_of_work() as uow:
        uow.items.register_items(LISTING, language=LANG)
        a, b = uow.claims.claim_batch(owner="w1", language=LANG, limit=2, lease_s=60)
        _done(uow, a, "alpha")
        uow.items.set_item_metadata({a.source_uri: {"mrn": "1"}}, language=LANG)
    with store.unit_of_work() as uow:
        unsettled = uow.item_queries.find_unsettled(
            [*LISTING, SourceFile(d, 5, "v1")], language=LANG, settled=("done", "skipped")
        )
        seen_.append(sorted(unsettled))
        changed = [SourceFile(a.source_uri, 100, "v2"), SourceFile(b.source_uri, 101, "v1")]
        seen_.append(uow.item_queries.find_unsettled(changed[:1], language=LANG, settled=("done",)))
        held = ("processing",)
        seen_.append(uow.item_queries.find_unsettled(changed[1:], language=LANG, settled=held))
    skipped = [
        SkippedFile(LISTING[2].uri, "permission denied", unreadable=True),  # pending: recorded
        SkippedFile(b.source_uri, "permission denied", unreadable=True),  # being processed
        SkippedFile(a.source_uri, "permission denied", unreadable=True),  # done: left alone
        SkippedFile(e, "link loop", unreadable=True),
        SkippedFile(locked, "permission denied", unreadable=True, folder=True),
        SkippedFile(old, "timed out", unreadable=True, folder=True),
        SkippedFile("/archivez/f", "timed out", unreadable=True, folder=True),  # not under root
    ]
    with store.unit_of_work() as uow:
        seen_.append(uow.items.record_unreadable(skipped, language=LANG))
        seen_.append(uow.items.record_unreadable(skipped, language=LANG))  # nothing new
        seen_.append(uow.items.record_unreadable(skipped[5:6], language="fr-FR"))
        again = [SkippedFile(e, "no such device", unreadable=True)]  # another reason
        seen_.append(uow.items.record_unreadable(again, language=LANG))
        found = uow.item_queries.find_items(source_uris=[f.uri for f in skipped], language=LANG)
        seen_.append(sorted((seen(i), i.source_version) for i in found.values()))  # type: ignore[type-var]
    with store.unit_of_work() as uow:
        seen_.append(uow.items.resolve_listed_folders(root="/archive", unlisted=[locked],
                                                      language=LANG))  # fmt: skip
        seen_.append(uow.items.resolve_listed_folders(root="/archive/", unlisted=[],
                                                      language=LANG))  # fmt: skip
    with store.unit_of_work(read_only=True) as uow:
        seen_.append([export_seen(row) for row in uow.item_queries.export_rows()])
        seen_.append([export_seen(row) for row in uow.item_queries.export_rows(status="failed")])
    return seen_


def test_unreadable_files_folders_and_the_export_answer_alike(
    store: UnitOfWorkFactory, sqlite_reference: UnitOfWorkFactory
) -> None:
    real = listing_scenario(store)

    assert real == listing_scenario(sqlite_reference)
    assert real[0] == ["/archive/b.wav", "/archive/c.wav", "/archive/d.wav"]
    assert real[1:3] == [["/archive/a.wav"], ["/archive/b.wav"]]
    assert real[3:7] == [5, 0, 1, 1]  # c, e, locked, old, archivez/f; then none; fr-FR; e
    kept = {s[0]: (s[1], s[5], version) for s, version in real[7]}  # type: ignore[attr-defined]
    assert kept["a.wav"] == ("done", None, "v1")  # done: left alone
    assert kept["b.wav"] == ("processing", None, "v1")  # being processed: left alone
    assert kept["c.wav"] == kept["e.wav"] == ("failed", "source_unreadable", "unreadable")
    assert real[8:10] == [1, 1]  # old went (locked was not listed); then locked
    exported = real[10]
    assert [(r[0], r[1], r[2]) for r in exported] == [  # type: ignore[attr-defined]
        ("/archive/a.wav", LANG, "done"),
        ("/archive/b.wav", LANG, "processing"),
        ("/archive/c.wav", LANG, "failed"),
        ("/archive/e.wav", LANG, "failed"),
        ("/archive/old", "fr-FR", "failed"),
        ("/archivez/f", LANG, "failed"),
    ]
    assert exported[0][3] == "alpha"  # type: ignore[index]
    assert exported[0][11] == {"mrn": "1"}  # type: ignore[index]
    assert [r[0] for r in real[11]] == [  # type: ignore[attr-defined]
        "/archive/c.wav", "/archive/e.wav", "/archive/old", "/archivez/f",
    ]  # fmt: skip
