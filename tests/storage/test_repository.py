"""The repository contract, on SQLite and on PostgreSQL alike."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from storage.database import Store
from storage.errors import LeaseLost, StoreFailed
from storage.queries import IN_BATCH as _IN_BATCH
from storage.records import ItemRecord
from storage.sources import SourceFile

LANG = "en-IN"


def listed(count: int, *, version: str = "v1", prefix: str = "/archive") -> list[SourceFile]:
    return [SourceFile(f"{prefix}/file-{i:05d}.wav", 1000 + i, version) for i in range(count)]


def register(store: Store, files: list[SourceFile], language: str = LANG) -> None:
    with store.repository() as repo:
        repo.register_items(files, language=language)


def claim(store: Store, owner: str = "w1", limit: int = 10, **kwargs) -> list[ItemRecord]:
    kwargs.setdefault("language", LANG)
    kwargs.setdefault("lease_s", 60)
    with store.repository() as repo:
        return repo.claim_batch(owner=owner, limit=limit, **kwargs)


def get(store: Store, item_id: int) -> ItemRecord:
    with store.repository(read_only=True) as repo:
        item = repo.get_item(item_id)
    assert item is not None
    return item


def finish(store: Store, item: ItemRecord, owner: str = "w1", text: str = "hello") -> None:
    with store.repository() as repo:
        repo.finish_item(
            item.id, owner=owner, text=text, duration_ms=1500, chunk_count=1, extras={}
        )


# --- registering ---------------------------------------------------------------------


def test_register_counts_new_changed_unchanged(store: Store) -> None:
    with store.repository() as repo:
        first = repo.register_items(listed(5), language=LANG)
    changed = [*listed(2, version="v2"), *listed(5)[2:], SourceFile("/archive/new.wav", 1, "v1")]
    with store.repository() as repo:
        second = repo.register_items(changed, language=LANG)
    assert (first.new, first.changed, first.unchanged) == (5, 0, 0)
    assert (second.new, second.changed, second.unchanged) == (1, 2, 3)
    assert second.total == 6


def test_same_uri_in_two_languages_is_two_items(store: Store) -> None:
    register(store, listed(3), language="en-IN")
    register(store, listed(3), language="hi")
    with store.repository(read_only=True) as repo:
        assert repo.pending_count(language=None) == 6
        assert repo.pending_count(language="hi") == 3


def test_duplicate_uris_in_one_listing_register_once(store: Store) -> None:
    with store.repository() as repo:
        result = repo.register_items([*listed(3), *listed(3)], language=LANG)
    assert result.new == 3


def test_changed_version_sends_done_item_back_to_pending(store: Store) -> None:
    register(store, listed(1))
    [item] = claim(store)
    with store.repository() as repo:
        repo.set_fingerprint(item.id, sha256="a" * 64, size_bytes=1000, owner="w1")
    finish(store, item)
    register(store, listed(1, version="v2"))
    again = get(store, item.id)
    assert again.status == "pending"
    assert again.attempts == 0
    assert again.source_version == "v2"
    assert again.sha256 == "a" * 64  # kept until re-fingerprinted
    assert again.text is None
    assert again.done_at is None


@pytest.mark.parametrize("settle", ["skip", "fail"])
def test_changed_version_resets_skipped_and_failed_items(store: Store, settle: str) -> None:
    register(store, listed(1))
    [item] = claim(store)
    with store.repository() as repo:
        if settle == "skip":
            repo.skip_item(item.id, owner="w1", reason_kind="silent", reason="all silent")
        else:
            repo.fail_item(
                item.id,
                owner="w1",
                error_kind="bad_audio",
                message="undecodable",
                retryable=False,
                next_attempt_at=None,
            )
    register(store, listed(1, version="v2"))
    again = get(store, item.id)
    assert (again.status, again.attempts, again.error_kind, again.error_message) == (
        "pending",
        0,
        None,
        None,
    )


def test_changed_version_leaves_an_item_in_progress_alone(store: Store) -> None:
    register(store, listed(1))
    [item] = claim(store)
    with store.repository() as repo:
        result = repo.register_items(listed(1, version="v2"), language=LANG)
    assert result.changed == 1
    now = get(store, item.id)
    assert (now.status, now.lease_owner, now.source_version) == ("processing", "w1", "v1")
    finish(store, item)
    register(store, listed(1, version="v2"))  # the next listing sees the change again
    assert get(store, item.id).status == "pending"


def test_register_many_files_in_bulk(store: Store) -> None:
    count = 3 * _IN_BATCH + 7
    with store.repository() as repo:
        first = repo.register_items(listed(count), language=LANG)
    with store.repository() as repo:
        second = repo.register_items(listed(count), language=LANG)
    assert first.new == count
    assert second.unchanged == count


# --- claiming ------------------------------------------------------------------------


def test_claim_takes_oldest_pending_with_a_lease(store: Store) -> None:
    register(store, listed(5))
    now = datetime.now(UTC)
    items = claim(store, limit=3, lease_s=30, now=now)
    assert [i.source_uri for i in items] == [f.uri for f in listed(3)]
    for item in items:
        assert item.status == "processing"
        assert item.lease_owner == "w1"
        assert item.attempts == 1
        assert item.lease_expires_at == now + timedelta(seconds=30)
        assert item.lease_expires_at.tzinfo is not None
    rest = claim(store, owner="w2", limit=10)
    assert [i.source_uri for i in rest] == [f.uri for f in listed(5)[3:]]
    assert claim(store, owner="w3") == []


def test_expired_lease_is_reclaimed_by_another_worker(store: Store) -> None:
    register(store, listed(2))
    start = datetime.now(UTC)
    first = claim(store, owner="w1", lease_s=5, now=start)
    assert claim(store, owner="w2", now=start + timedelta(seconds=4)) == []
    taken = claim(store, owner="w2", now=start + timedelta(seconds=6))
    assert {i.id for i in taken} == {i.id for i in first}
    assert all(i.attempts == 2 and i.lease_owner == "w2" for i in taken)
    with pytest.raises(LeaseLost):
        finish(store, first[0], owner="w1")
    finish(store, taken[0], owner="w2")
    assert get(store, taken[0].id).status == "done"


def test_claim_filters_by_language(store: Store) -> None:
    register(store, listed(2), language="hi")
    register(store, listed(2), language="ta")
    items = claim(store, language="ta")
    assert {i.language for i in items} == {"ta"}
    assert len(claim(store, language=None)) == 2


@pytest.mark.parametrize("extra", [0, 2 * _IN_BATCH], ids=["few-uris", "many-uris"])
def test_claim_restricted_to_uris(store: Store, extra: int) -> None:
    register(store, listed(10, prefix="/other"))
    register(store, listed(30, prefix="/wanted"))
    wanted = [f.uri for f in listed(30, prefix="/wanted")][::3]
    unknown = [f"/nowhere/{i}.wav" for i in range(extra)]
    items = claim(store, limit=4, uris=[*unknown, *wanted])
    assert [i.source_uri for i in items] == wanted[:4]
    rest = claim(store, limit=100, uris=[*wanted, *unknown])
    assert [i.source_uri for i in rest] == wanted[4:]


def test_claim_with_zero_limit_claims_nothing(store: Store) -> None:
    register(store, listed(2))
    assert claim(store, limit=0) == []


def test_release_gives_items_back_without_counting_an_attempt(store: Store) -> None:
    register(store, listed(3))
    items = claim(store, limit=3)
    with store.repository() as repo:
        repo.release_items([i.id for i in items[:2]], owner="w1")
        repo.release_items([items[2].id], owner="someone-else")  # not theirs: ignored
    released = [get(store, i.id) for i in items]
    assert [(r.status, r.attempts, r.lease_owner) for r in released] == [
        ("pending", 0, None),
        ("pending", 0, None),
        ("processing", 1, "w1"),
    ]


def test_renew_lease_extends_ours_and_reports_lost_ones(store: Store) -> None:
    register(store, listed(2))
    start = datetime.now(UTC)
    mine = claim(store, owner="w1", lease_s=5, now=start - timedelta(seconds=60))
    stolen = claim(store, owner="w2", limit=1, now=start)  # w1's lease had expired
    with store.repository() as repo:
        lost = repo.renew_lease([i.id for i in mine], owner="w1", lease_s=300)
    assert lost == {stolen[0].id}
    kept = next(i for i in mine if i.id != stolen[0].id)
    renewed = get(store, kept.id)
    assert renewed.lease_expires_at is not None
    assert renewed.lease_expires_at > start + timedelta(seconds=250)


# --- one item's work -----------------------------------------------------------------


def record(store: Store, item_id: int, index: int, text: str, status: str = "done") -> None:
    with store.repository() as repo:
        repo.record_chunk_result(
            item_id,
            index=index,
            start_ms=index * 1000,
            end_ms=(index + 1) * 1000,
            size_bytes=32_044,
            text=text,
            status=status,
            txn_id=f"txn-{index}",
            latency_ms=12.5,
        )


def test_chunk_results_are_kept_and_replaced(store: Store) -> None:
    register(store, listed(1))
    [item] = claim(store)
    record(store, item.id, 0, "first")
    record(store, item.id, 1, "", status="silent")
    record(store, item.id, 2, "", status="failed")
    record(store, item.id, 0, "first again")
    with store.repository(read_only=True) as repo:
        chunks = repo.done_chunks(item.id)
    assert sorted(chunks) == [0, 1]
    assert chunks[0].text == "first again"
    assert (chunks[0].start_ms, chunks[0].end_ms, chunks[0].txn_id) == (0, 1000, "txn-0")
    assert chunks[0].latency_ms == 12.5
    assert chunks[1].status == "silent"


def test_a_committed_chunk_survives_a_later_failure(store: Store) -> None:
    register(store, listed(1))
    [item] = claim(store)
    record(store, item.id, 0, "kept")
    with pytest.raises(RuntimeError), store.repository() as repo:  # noqa: PT012
        repo.record_chunk_result(
            item.id, index=1, start_ms=1000, end_ms=2000, size_bytes=1, text="lost"
        )
        raise RuntimeError("crash before commit")
    with store.repository(read_only=True) as repo:
        assert sorted(repo.done_chunks(item.id)) == [0]


def test_repository_commit_ends_the_transaction(store: Store) -> None:
    register(store, listed(1))
    [item] = claim(store)
    with pytest.raises(RuntimeError), store.repository() as repo:  # noqa: PT012
        repo.record_chunk_result(item.id, index=0, start_ms=0, end_ms=1, size_bytes=1, text="a")
        repo.commit()
        raise RuntimeError("crash after commit")
    with store.repository(read_only=True) as repo:
        assert sorted(repo.done_chunks(item.id)) == [0]


@pytest.mark.parametrize(
    ("new_sha", "chunks_left"), [("a" * 64, [0, 1]), ("b" * 64, [])], ids=["same", "changed"]
)
def test_fingerprint_change_drops_old_chunks(store: Store, new_sha: str, chunks_left) -> None:
    register(store, listed(1))
    [item] = claim(store)
    with store.repository() as repo:
        repo.set_fingerprint(item.id, sha256="a" * 64, size_bytes=10, owner="w1")
    record(store, item.id, 0, "x")
    record(store, item.id, 1, "y")
    with store.repository() as repo:
        repo.set_fingerprint(item.id, sha256=new_sha, size_bytes=11, owner="w1")
        assert sorted(repo.done_chunks(item.id)) == chunks_left
    assert (get(store, item.id).sha256, get(store, item.id).size_bytes) == (new_sha, 11)


def test_reset_chunks_forgets_them(store: Store) -> None:
    register(store, listed(1))
    [item] = claim(store)
    record(store, item.id, 0, "x")
    with store.repository() as repo:
        repo.reset_chunks(item.id)
        assert repo.done_chunks(item.id) == {}


def test_finish_records_transcript_and_extras(store: Store) -> None:
    register(store, listed(1))
    [item] = claim(store)
    with store.repository() as repo:
        repo.finish_item(
            item.id,
            owner="w1",
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


@pytest.mark.parametrize("action", ["finish", "skip", "fail", "fingerprint"])
def test_work_by_a_worker_without_the_lease_raises_lease_lost(store: Store, action: str) -> None:
    register(store, listed(1))
    [item] = claim(store, owner="w1")
    with pytest.raises(LeaseLost), store.repository() as repo:  # noqa: PT012
        if action == "finish":
            repo.finish_item(
                item.id, owner="w2", text="", duration_ms=None, chunk_count=0, extras={}
            )
        elif action == "skip":
            repo.skip_item(item.id, owner="w2", reason_kind="silent", reason="silent")
        elif action == "fail":
            repo.fail_item(
                item.id,
                owner="w2",
                error_kind="x",
                message="x",
                retryable=True,
                next_attempt_at=None,
            )
        else:
            repo.set_fingerprint(item.id, sha256="c" * 64, size_bytes=1, owner="w2")
    assert get(store, item.id).status == "processing"


def test_lease_lost_is_transient() -> None:
    assert LeaseLost("x").transient
    assert LeaseLost.kind == "lease_lost"


def test_find_done_with_sha(store: Store) -> None:
    register(store, listed(2))
    items = claim(store, limit=2)
    with store.repository() as repo:
        for item in items:
            repo.set_fingerprint(item.id, sha256="d" * 64, size_bytes=5, owner="w1")
    finish(store, items[0], text="once")
    with store.repository(read_only=True) as repo:
        found = repo.find_done_with_sha(sha256="d" * 64, language=LANG)
        assert found is not None
        assert found.id == items[0].id
        assert found.text == "once"
        assert repo.find_done_with_sha(sha256="d" * 64, language="hi") is None
        assert repo.find_done_with_sha(sha256="e" * 64, language=LANG) is None


def test_skip_records_reason_and_duration(store: Store) -> None:
    register(store, listed(1))
    [item] = claim(store)
    with store.repository() as repo:
        repo.skip_item(
            item.id, owner="w1", reason_kind="silent_audio", reason="no speech", duration_ms=900
        )
    skipped = get(store, item.id)
    assert (skipped.status, skipped.error_kind, skipped.error_message, skipped.duration_ms) == (
        "skipped",
        "silent_audio",
        "no speech",
        900,
    )


# --- failures and reruns -------------------------------------------------------------


def fail(store: Store, item: ItemRecord, *, retryable: bool, at: datetime | None) -> None:
    with store.repository() as repo:
        repo.fail_item(
            item.id,
            owner=item.lease_owner or "w1",
            error_kind="service_unavailable" if retryable else "request_rejected",
            message="503 from the service" if retryable else "400 from the service",
            retryable=retryable,
            next_attempt_at=at,
        )


def test_requeue_failures_selects_due_retryable_under_the_limit(store: Store) -> None:
    now = datetime.now(UTC)
    register(store, listed(5))
    a, b, c, d, e = claim(store, limit=5)
    fail(store, a, retryable=True, at=now - timedelta(minutes=1))  # due
    fail(store, b, retryable=True, at=now + timedelta(hours=1))  # not yet
    fail(store, c, retryable=False, at=None)  # permanent
    fail(store, d, retryable=True, at=None)  # due, but...
    with store.repository() as repo:  # ...d has used its attempts
        repo.requeue_failures(language=LANG, max_attempts=1, include_permanent=False, now=now)
    assert get(store, d.id).status == "failed"
    with store.repository() as repo:
        count = repo.requeue_failures(
            language=LANG, max_attempts=5, include_permanent=False, now=now
        )
    assert count == 2
    assert [get(store, i.id).status for i in (a, b, c, d)] == [
        "pending",
        "failed",
        "failed",
        "pending",
    ]
    with store.repository() as repo:
        assert (
            repo.requeue_failures(language=None, max_attempts=5, include_permanent=True, now=now)
            == 1
        )
    assert get(store, c.id).status == "pending"
    assert get(store, e.id).status == "processing"
    again = claim(store, limit=5)
    assert {i.id for i in again} == {a.id, c.id, d.id}
    assert all(i.attempts == 2 for i in again)


def test_requeue_respects_language(store: Store) -> None:
    register(store, listed(1), language="hi")
    [item] = claim(store, language="hi")
    fail(store, item, retryable=True, at=None)
    with store.repository() as repo:
        assert repo.requeue_failures(language="ta", max_attempts=5, include_permanent=True) == 0
        assert repo.requeue_failures(language="hi", max_attempts=5, include_permanent=True) == 1


def test_status_counts_failures_and_export(store: Store) -> None:
    register(store, listed(4))
    register(store, listed(1), language="hi")
    a, b, c, _ = claim(store, limit=4)
    finish(store, a, text="one")
    finish(store, b, text="two")
    fail(store, c, retryable=True, at=None)
    with store.repository(read_only=True) as repo:
        counts = {(s.language, s.status): (s.items, s.audio_ms) for s in repo.status_counts()}
        failures = repo.list_failures(limit=5)
        done_rows = list(repo.export_rows(status="done"))
        all_rows = list(repo.export_rows())
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


def test_list_failures_newest_first_and_limited(store: Store) -> None:
    register(store, listed(3))
    items = claim(store, limit=3)
    for item in items:
        fail(store, item, retryable=True, at=None)
    with store.repository(read_only=True) as repo:
        failures = repo.list_failures(limit=2)
    assert [f.id for f in failures] == [items[2].id, items[1].id]


def test_runs_record_counts(store: Store) -> None:
    with store.repository() as repo:
        run_id = repo.start_run(source="/archive", language=LANG)
    with store.repository() as repo:
        repo.finish_run(
            run_id, counts={"files": 3, "done": 2, "failed": 1, "chunks": 7}, status="done"
        )
        [run] = repo.latest_runs(limit=1)
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


def test_naive_datetimes_are_refused(store: Store) -> None:
    register(store, listed(1))
    with pytest.raises(StoreFailed), store.repository() as repo:
        repo.claim_batch(owner="w", language=LANG, limit=1, lease_s=5, now=datetime(2030, 1, 1))


@pytest.mark.parametrize(
    ("prefix", "expected"),
    [
        ("/data/in", ["/data/in/a.wav", "/data/in/sub/b.wav"]),
        ("/data/in/", ["/data/in/a.wav", "/data/in/sub/b.wav"]),
        ("/data/in/a.wav", ["/data/in/a.wav"]),
        ("/data/IN", []),
        ("/data/in_", ["/data/in_/d.wav"]),
        ("s3://bucket", ["s3://bucket/x%.wav"]),
    ],
    ids=["folder", "trailing-slash", "one-file", "case-sensitive", "underscore", "bucket"],
)
def test_claim_restricted_to_a_source_prefix(store: Store, prefix: str, expected) -> None:
    uris = ["/data/in/a.wav", "/data/in/sub/b.wav", "/data/inbox/c.wav", "/data/in_/d.wav"]
    files = [SourceFile(u, 1, "v1") for u in [*uris, "s3://bucket/x%.wav", "s3://bucket2/y.wav"]]
    register(store, files)
    items = claim(store, limit=10, source_prefix=prefix)
    assert [i.source_uri for i in items] == expected
