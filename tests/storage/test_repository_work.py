"""The repository contract, on SQLite and on PostgreSQL alike: one item's work and queries."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import event
from sqlalchemy.engine.interfaces import CacheStats

from storage.errors import LeaseLost
from storage.interface import UnitOfWorkFactory
from storage.records import ItemRecord
from tests.storage.repository_helpers import (
    LANG,
    claim,
    fail,
    finish,
    get,
    listed,
    record,
    register,
)

# --- one item's work -----------------------------------------------------------------


def test_chunk_results_are_kept_and_replaced(store: UnitOfWorkFactory) -> None:
    register(store, listed(1))
    [item] = claim(store)
    record(store, item, 0, "first")
    record(store, item, 1, "", status="silent")
    record(store, item, 2, "", status="failed")
    record(store, item, 0, "first again")
    with store.unit_of_work(read_only=True) as uow:
        chunks = uow.chunks.done_chunks(item.id)
    assert sorted(chunks) == [0, 1]
    assert chunks[0].text == "first again"
    assert (chunks[0].start_ms, chunks[0].end_ms, chunks[0].txn_id) == (0, 1000, "txn-0")
    assert chunks[0].latency_ms == 12.5
    assert chunks[1].status == "silent"


def test_a_chunk_answer_reuses_its_compiled_statement(store: UnitOfWorkFactory) -> None:
    """Every chunk answer is an upsert: compiled once, then served from SQLAlchemy's cache
    (compiling it again for every answer cost more CPU than running it)."""
    register(store, listed(1))
    [item] = claim(store)
    seen: list[CacheStats] = []

    def note(
        _conn: object, _cursor: object, sql: str, _params: object, context: Any, _many: bool
    ) -> None:
        if sql.startswith("INSERT INTO chunks"):
            seen.append(context.cache_hit)

    event.listen(store.engine, "before_cursor_execute", note)  # type: ignore[attr-defined]
    for index, text in [(0, "first"), (1, "second"), (0, "first again")]:
        record(store, item, index, text)
    assert seen[1:] == [CacheStats.CACHE_HIT, CacheStats.CACHE_HIT]
    with store.unit_of_work(read_only=True) as uow:
        chunks = uow.chunks.done_chunks(item.id)
    assert (chunks[0].text, chunks[1].text) == ("first again", "second")


def test_a_committed_chunk_survives_a_later_failure(store: UnitOfWorkFactory) -> None:
    register(store, listed(1))
    [item] = claim(store)
    record(store, item, 0, "kept")
    with pytest.raises(RuntimeError), store.unit_of_work() as uow:  # noqa: PT012
        uow.chunks.record_chunk_result(
            item.id,
            lease_token=item.lease_token,
            index=1,
            start_ms=1000,
            end_ms=2000,
            size_bytes=1,
            text="lost",
        )
        raise RuntimeError("crash before commit")
    with store.unit_of_work(read_only=True) as uow:
        assert sorted(uow.chunks.done_chunks(item.id)) == [0]


def test_repository_commit_ends_the_transaction(store: UnitOfWorkFactory) -> None:
    register(store, listed(1))
    [item] = claim(store)
    with pytest.raises(RuntimeError), store.unit_of_work() as uow:  # noqa: PT012
        uow.chunks.record_chunk_result(
            item.id,
            lease_token=item.lease_token,
            index=0,
            start_ms=0,
            end_ms=1,
            size_bytes=1,
            text="a",
        )
        uow.commit()
        raise RuntimeError("crash after commit")
    with store.unit_of_work(read_only=True) as uow:
        assert sorted(uow.chunks.done_chunks(item.id)) == [0]


@pytest.mark.parametrize(
    ("new_sha", "chunks_left"), [("a" * 64, [0, 1]), ("b" * 64, [])], ids=["same", "changed"]
)
def test_fingerprint_change_drops_old_chunks(
    store: UnitOfWorkFactory, new_sha: str, chunks_left
) -> None:
    register(store, listed(1))
    [item] = claim(store)
    with store.unit_of_work() as uow:
        uow.claims.set_fingerprint(
            item.id, sha256="a" * 64, size_bytes=10, lease_token=item.lease_token
        )
    record(store, item, 0, "x")
    record(store, item, 1, "y")
    with store.unit_of_work() as uow:
        uow.claims.set_fingerprint(
            item.id, sha256=new_sha, size_bytes=11, lease_token=item.lease_token
        )
        assert sorted(uow.chunks.done_chunks(item.id)) == chunks_left
    assert (get(store, item.id).sha256, get(store, item.id).size_bytes) == (new_sha, 11)


def test_a_checked_fingerprint_is_one_write_under_the_lease(store: UnitOfWorkFactory) -> None:
    """The reuse decision compared the content with the claim's and reset the chunks of
    changed content: the stored fingerprint is not read again, the lease still checked."""
    register(store, listed(1))
    [item] = claim(store)
    statements: list[str] = []
    event.listen(store.engine, "before_cursor_execute", lambda *a: statements.append(a[2]))  # type: ignore[attr-defined]
    with store.unit_of_work() as uow:
        uow.claims.set_fingerprint(
            item.id, sha256="b" * 64, size_bytes=11, lease_token=item.lease_token,
            checked_content=True,
        )  # fmt: skip
    writes = [s for s in statements if not s.startswith(("BEGIN", "SAVEPOINT", "RELEASE"))]
    assert len(writes) == 1
    assert writes[0].startswith("UPDATE items")
    assert (get(store, item.id).sha256, get(store, item.id).size_bytes) == ("b" * 64, 11)
    with pytest.raises(LeaseLost), store.unit_of_work() as uow:
        uow.claims.set_fingerprint(
            item.id, sha256="c" * 64, size_bytes=12, lease_token="not-ours",
            checked_content=True,
        )  # fmt: skip
    assert get(store, item.id).sha256 == "b" * 64


def test_reset_chunks_forgets_them(store: UnitOfWorkFactory) -> None:
    register(store, listed(1))
    [item] = claim(store)
    record(store, item, 0, "x")
    with store.unit_of_work() as uow:
        uow.chunks.reset_chunks(item.id)
        assert uow.chunks.done_chunks(item.id) == {}


def test_finish_records_transcript_and_extras(store: UnitOfWorkFactory) -> None:
    register(store, listed(1))
    [item] = claim(store)
    with store.unit_of_work() as uow:
        uow.claims.finish_item(
            item.id,
            lease_token=item.lease_token,
            text="patient is stable",
            duration_ms=61_000,
            chunk_count=2,
            extras={"txn_ids": ["t1", "t2"], "audio_duration": 61.0},
        )
    done = get(store, item.id)
    assert (done.status, done.text, done.duration_ms, done.chunk_count) == (
        "done",
        "patient is stable",
        61_000,
        2,
    )
    assert done.extras == {"txn_ids": ["t1", "t2"], "audio_duration": 61.0}
    assert done.lease_owner is None
    assert done.lease_expires_at is None
    assert done.done_at is not None
    assert done.done_at.tzinfo is not None


@pytest.mark.parametrize("action", ["finish", "skip", "fail", "fingerprint", "chunk"])
def test_work_by_a_worker_without_the_lease_raises_lease_lost(
    store: UnitOfWorkFactory, action: str
) -> None:
    register(store, listed(1))
    [item] = claim(store, owner="w1")
    with pytest.raises(LeaseLost), store.unit_of_work() as uow:  # noqa: PT012
        if action == "finish":
            uow.claims.finish_item(
                item.id,
                lease_token="another-claim",
                text="",
                duration_ms=None,
                chunk_count=0,
                extras={},
            )
        elif action == "skip":
            uow.claims.skip_item(
                item.id, lease_token="another-claim", reason_kind="silent", reason="silent"
            )
        elif action == "fail":
            uow.claims.fail_item(
                item.id,
                lease_token="another-claim",
                error_kind="x",
                message="x",
                retryable=True,
                next_attempt_at=None,
            )
        elif action == "fingerprint":
            uow.claims.set_fingerprint(
                item.id, sha256="c" * 64, size_bytes=1, lease_token="another-claim"
            )
        else:
            uow.chunks.record_chunk_result(
                item.id,
                lease_token="another-claim",
                index=0,
                start_ms=0,
                end_ms=1,
                size_bytes=1,
                text="x",
            )
    assert get(store, item.id).status == "processing"
    with store.unit_of_work(read_only=True) as uow:
        assert uow.chunks.done_chunks(item.id) == {}


def test_a_worker_that_lost_its_lease_cannot_write_a_chunk(store: UnitOfWorkFactory) -> None:
    register(store, listed(1))
    start = datetime.now(UTC)
    [late] = claim(store, owner="w1", lease_s=5, now=start - timedelta(seconds=60))
    with store.unit_of_work() as uow:
        uow.claims.set_fingerprint(
            late.id, sha256="a" * 64, size_bytes=10, lease_token=late.lease_token
        )
    record(store, late, 0, "old content")
    [taken] = claim(store, owner="w2", now=start)  # w1's lease had expired
    with store.unit_of_work() as uow:  # the content changed: the old chunks go
        uow.claims.set_fingerprint(
            taken.id, sha256="b" * 64, size_bytes=11, lease_token=taken.lease_token
        )
    with pytest.raises(LeaseLost):
        record(store, late, 1, "old content, later chunk")
    record(store, taken, 0, "new content")
    with store.unit_of_work(read_only=True) as uow:
        chunks = uow.chunks.done_chunks(taken.id)
    assert {i: c.text for i, c in chunks.items()} == {0: "new content"}


@pytest.mark.parametrize("settle", ["finished", "released", "changed"])
def test_no_chunk_is_written_for_an_item_no_longer_processing(
    store: UnitOfWorkFactory, settle: str
) -> None:
    register(store, listed(1))
    an_hour_ago = datetime.now(UTC) - timedelta(hours=1)
    [item] = claim(store, owner="w1", lease_s=5, now=an_hour_ago)  # expired, not taken over
    if settle == "finished":
        finish(store, item)
    elif settle == "released":
        with store.unit_of_work() as uow:
            uow.claims.release_items([item.lease_token])
    else:
        register(store, listed(1, version="v2"))  # changed under an expired lease: pending
    with pytest.raises(LeaseLost):
        record(store, item, 0, "late")
    with store.unit_of_work(read_only=True) as uow:
        assert uow.chunks.done_chunks(item.id) == {}


def test_lease_lost_is_transient() -> None:
    assert LeaseLost("x").transient
    assert LeaseLost.kind == "lease_lost"


def test_find_done_with_sha(store: UnitOfWorkFactory) -> None:
    register(store, listed(2))
    items = claim(store, limit=2)
    with store.unit_of_work() as uow:
        for item in items:
            uow.claims.set_fingerprint(
                item.id, sha256="d" * 64, size_bytes=5, lease_token=item.lease_token
            )
    finish(store, items[0], text="once")
    with store.unit_of_work(read_only=True) as uow:
        found = uow.item_queries.find_done_with_sha(sha256="d" * 64, language=LANG)
        assert found is not None
        assert found.id == items[0].id
        assert found.text == "once"
        assert uow.item_queries.find_done_with_sha(sha256="d" * 64, language="hi") is None
        assert uow.item_queries.find_done_with_sha(sha256="e" * 64, language=LANG) is None


def test_skip_records_reason_and_duration(store: UnitOfWorkFactory) -> None:
    register(store, listed(1))
    [item] = claim(store)
    with store.unit_of_work() as uow:
        uow.claims.skip_item(
            item.id,
            lease_token=item.lease_token,
            reason_kind="silent_audio",
            reason="no speech",
            duration_ms=900,
        )
    skipped = get(store, item.id)
    assert (skipped.status, skipped.error_kind, skipped.error_message, skipped.duration_ms) == (
        "skipped",
        "silent_audio",
        "no speech",
        900,
    )


# --- failures and reruns -------------------------------------------------------------


def test_requeue_failures_selects_due_retryable_under_the_limit(store: UnitOfWorkFactory) -> None:
    now = datetime.now(UTC)
    register(store, listed(5))
    a, b, c, d, e = claim(store, limit=5)
    fail(store, a, retryable=True, at=now - timedelta(minutes=1))  # due
    fail(store, b, retryable=True, at=now + timedelta(hours=1))  # not yet
    fail(store, c, retryable=False, at=None)  # permanent
    fail(store, d, retryable=True, at=None)  # due, but...
    with store.unit_of_work() as uow:  # ...d has used its attempts
        uow.items.requeue_failures(language=LANG, max_attempts=1, include_permanent=False, now=now)
    assert get(store, d.id).status == "failed"
    with store.unit_of_work() as uow:
        count = uow.items.requeue_failures(
            language=LANG, max_attempts=5, include_permanent=False, now=now
        )
    assert count == 2
    assert [get(store, i.id).status for i in (a, b, c, d)] == [
        "pending",
        "failed",
        "failed",
        "pending",
    ]
    with store.unit_of_work() as uow:
        assert (
            uow.items.requeue_failures(
                language=None, max_attempts=5, include_permanent=True, now=now
            )
            == 2
        )
    # With include_permanent every failure goes back: the permanent one and the one
    # whose next attempt had not yet come.
    assert get(store, b.id).status == "pending"
    assert get(store, c.id).status == "pending"
    assert get(store, e.id).status == "processing"
    again = claim(store, limit=5)
    assert {i.id for i in again} == {a.id, b.id, c.id, d.id}
    assert all(i.attempts == 2 for i in again)


def test_requeue_respects_language(store: UnitOfWorkFactory) -> None:
    register(store, listed(1), language="hi")
    [item] = claim(store, language="hi")
    fail(store, item, retryable=True, at=None)
    with store.unit_of_work() as uow:
        assert (
            uow.items.requeue_failures(language="ta", max_attempts=5, include_permanent=True) == 0
        )
        assert (
            uow.items.requeue_failures(language="hi", max_attempts=5, include_permanent=True) == 1
        )


def test_status_counts_failures_and_export(store: UnitOfWorkFactory) -> None:
    register(store, listed(4))
    register(store, listed(1), language="hi")
    a, b, c, _ = claim(store, limit=4)
    finish(store, a, text="one")
    finish(store, b, text="two")
    fail(store, c, retryable=True, at=None)
    with store.unit_of_work(read_only=True) as uow:
        counts = {
            (s.language, s.status): (s.items, s.audio_ms) for s in uow.item_queries.status_counts()
        }
        failures = uow.item_queries.list_failures(limit=5)
        done_rows = list(uow.item_queries.export_rows(status="done"))
        all_rows = list(uow.item_queries.export_rows())
    assert counts == {
        (LANG, "done"): (2, 3000),
        (LANG, "failed"): (1, 0),
        (LANG, "processing"): (1, 0),
        ("hi", "pending"): (1, 0),
    }
    assert [f.id for f in failures] == [c.id]
    assert failures[0].error_message == "503 from the service"
    assert [r.text for r in done_rows] == ["one", "two"]
    assert len(all_rows) == 5
    assert all(r.updated_at.tzinfo is not None for r in all_rows)


def test_list_failures_newest_first_and_limited(store: UnitOfWorkFactory) -> None:
    register(store, listed(3))
    items = claim(store, limit=3)
    for item in items:
        fail(store, item, retryable=True, at=None)
    with store.unit_of_work(read_only=True) as uow:
        failures = uow.item_queries.list_failures(limit=2)
    assert [f.id for f in failures] == [items[2].id, items[1].id]


def test_runs_record_counts(store: UnitOfWorkFactory) -> None:
    with store.unit_of_work() as uow:
        run_id = uow.runs.start_run(source="/archive", language=LANG)
    with store.unit_of_work() as uow:
        uow.runs.finish_run(
            run_id, counts={"files": 3, "done": 2, "failed": 1, "chunks": 7}, status="done"
        )
        [run] = uow.runs.latest_runs(limit=1)
    assert run.id == run_id
    assert run.status == "done"
    assert run.finished_at is not None
    assert run.counts == {
        "files": 3,
        "done": 2,
        "failed": 1,
        "skipped": 0,
        "requests": 0,
        "retries": 0,
        "chunks": 7,
    }


def skip(store: UnitOfWorkFactory, item: ItemRecord) -> None:
    with store.unit_of_work() as uow:
        uow.claims.skip_item(
            item.id, lease_token=item.lease_token, reason_kind="silent_audio", reason="no speech"
        )


def test_requeue_skipped_only_with_the_flag_and_judged_afresh(store: UnitOfWorkFactory) -> None:
    register(store, listed(3))
    silent, failed, other = claim(store, limit=3)
    record(store, silent, 0, "", status="silent")
    skip(store, silent)
    fail(store, failed, retryable=False, at=None)
    record(store, other, 0, "", status="silent")
    skip(store, other)
    with store.unit_of_work() as uow:  # a failure flag never touches skipped recordings
        assert (
            uow.items.requeue_failures(language=LANG, max_attempts=5, include_permanent=True) == 1
        )
    assert get(store, silent.id).status == "skipped"

    with store.unit_of_work() as uow:
        count = uow.items.requeue_failures(
            language=LANG, max_attempts=1, include_permanent=False, include_skipped=True
        )

    # Every skipped recording, whatever its attempts; its silent chunks are forgotten so
    # the next run judges the audio afresh instead of reusing the old "silent" verdict.
    assert count == 2
    assert {get(store, i.id).status for i in (silent, other)} == {"pending"}
    with store.unit_of_work(read_only=True) as uow:
        assert uow.chunks.done_chunks(silent.id) == {}
        assert uow.chunks.done_chunks(other.id) == {}
    with store.unit_of_work() as uow:
        assert (
            uow.items.requeue_failures(
                language="hi", max_attempts=5, include_permanent=False, include_skipped=True
            )
            == 0
        )
