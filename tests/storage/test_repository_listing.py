"""The repository contract, on SQLite and on PostgreSQL alike: registering and claiming."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from storage.errors import LeaseLost, StoreFailed
from storage.interface import UnitOfWorkFactory
from storage.queries import IN_BATCH as _IN_BATCH
from storage.sources import SourceFile
from tests.storage.repository_helpers import LANG, claim, finish, get, listed, register

# --- registering ---------------------------------------------------------------------


def test_register_counts_new_changed_unchanged(store: UnitOfWorkFactory) -> None:
    with store.unit_of_work() as uow:
        first = uow.items.register_items(listed(5), language=LANG)
    changed = [*listed(2, version="v2"), *listed(5)[2:], SourceFile("/archive/new.wav", 1, "v1")]
    with store.unit_of_work() as uow:
        second = uow.items.register_items(changed, language=LANG)
    assert (first.new, first.changed, first.unchanged) == (5, 0, 0)
    assert (second.new, second.changed, second.unchanged) == (1, 2, 3)
    assert second.total == 6


def test_same_uri_in_two_languages_is_two_items(store: UnitOfWorkFactory) -> None:
    register(store, listed(3), language="en-IN")
    register(store, listed(3), language="hi")
    with store.unit_of_work(read_only=True) as uow:
        assert uow.item_queries.pending_count(language=None) == 6
        assert uow.item_queries.pending_count(language="hi") == 3


def test_pending_count_under_a_source_counts_that_folder_only(store: UnitOfWorkFactory) -> None:
    register(store, listed(3, prefix="/archive/ward"))
    register(store, listed(2, prefix="/archive/ward-b"))  # a name prefix, not below
    register(store, listed(4, prefix="/archive/clinic"))
    with store.unit_of_work(read_only=True) as uow:
        assert uow.item_queries.pending_count(language=LANG, source_prefix="/archive/ward") == 3
        assert uow.item_queries.pending_count(language=LANG, source_prefix="/archive/ward/") == 3
        assert uow.item_queries.pending_count(language=LANG, source_prefix="/archive") == 9
        assert uow.item_queries.pending_count(language="hi", source_prefix="/archive") == 0


def test_find_items_returns_the_known_ones_by_uri_across_batches(store: UnitOfWorkFactory) -> None:
    files = listed(_IN_BATCH + 3)
    register(store, files)
    register(store, files[:2], language="hi")
    asked = [f.uri for f in files] + ["/archive/never-listed.wav"]
    with store.unit_of_work(read_only=True) as uow:
        found = uow.item_queries.find_items(source_uris=asked, language=LANG)
        found_hi = uow.item_queries.find_items(source_uris=asked, language="hi")
    assert set(found) == {f.uri for f in files}
    assert all(found[uri].source_uri == uri and found[uri].language == LANG for uri in found)
    assert set(found_hi) == {f.uri for f in files[:2]}


def test_duplicate_uris_in_one_listing_register_once(store: UnitOfWorkFactory) -> None:
    with store.unit_of_work() as uow:
        result = uow.items.register_items([*listed(3), *listed(3)], language=LANG)
    assert result.new == 3


def test_changed_version_sends_done_item_back_to_pending(store: UnitOfWorkFactory) -> None:
    register(store, listed(1))
    [item] = claim(store)
    with store.unit_of_work() as uow:
        uow.claims.set_fingerprint(
            item.id, sha256="a" * 64, size_bytes=1000, lease_token=item.lease_token
        )
    finish(store, item)
    register(store, [SourceFile(listed(1)[0].uri, 999, "v2")])  # another size
    again = get(store, item.id)
    assert again.status == "pending"
    assert again.attempts == 0
    assert again.source_version == "v2"
    assert again.sha256 == "a" * 64  # kept until re-fingerprinted
    assert again.text is None
    assert again.done_at is None


def test_a_touched_done_item_keeps_its_result_until_its_bytes_are_hashed(
    store: UnitOfWorkFactory,
) -> None:
    register(store, listed(1))
    [item] = claim(store)
    finish(store, item)
    done = get(store, item.id)
    register(store, listed(1, version="v2"))  # a new mtime, the old size
    again = get(store, item.id)
    assert (again.status, again.source_version, again.duration_ms) == ("pending", "v2", None)
    assert (again.text, again.done_at) == (done.text, done.done_at)
    assert again.extras["touched"] == {"status": "done", "duration_ms": done.duration_ms}


@pytest.mark.parametrize("settle", ["skip", "fail"])
def test_changed_version_resets_skipped_and_failed_items(
    store: UnitOfWorkFactory, settle: str
) -> None:
    register(store, listed(1))
    [item] = claim(store)
    with store.unit_of_work() as uow:
        if settle == "skip":
            uow.claims.skip_item(
                item.id, lease_token=item.lease_token, reason_kind="silent", reason="all silent"
            )
        else:
            uow.claims.fail_item(
                item.id,
                lease_token=item.lease_token,
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


def test_changed_version_leaves_an_item_in_progress_alone(store: UnitOfWorkFactory) -> None:
    register(store, listed(1))
    [item] = claim(store)
    with store.unit_of_work() as uow:
        result = uow.items.register_items(listed(1, version="v2"), language=LANG)
    assert result.changed == 1
    now = get(store, item.id)
    assert (now.status, now.lease_owner, now.source_version) == ("processing", "w1", "v1")
    finish(store, item)
    register(store, listed(1, version="v2"))  # the next listing sees the change again
    assert get(store, item.id).status == "pending"


def test_a_size_change_alone_sends_a_done_item_back(store: UnitOfWorkFactory) -> None:
    [original] = listed(1)
    register(store, [original])
    [item] = claim(store)
    finish(store, item, text="old words")
    rewritten = SourceFile(original.uri, original.size_bytes + 1, original.version)  # same mtime
    with store.unit_of_work() as uow:
        result = uow.items.register_items([rewritten], language=LANG)
    assert (result.new, result.changed, result.unchanged) == (0, 1, 0)
    again = get(store, item.id)
    assert (again.status, again.size_bytes, again.text) == ("pending", rewritten.size_bytes, None)
    with store.unit_of_work() as uow:  # and once registered, the same listing is unchanged
        assert uow.items.register_items([rewritten], language=LANG).unchanged == 1


def test_back_to_pending_forgets_the_old_result(store: UnitOfWorkFactory) -> None:
    register(store, listed(1))
    [item] = claim(store)
    with store.unit_of_work() as uow:
        uow.claims.finish_item(
            item.id,
            lease_token=item.lease_token,
            text="old",
            duration_ms=7_200_000,
            chunk_count=12,
            extras={"txn_ids": ["t1"]},
        )
    register(store, [SourceFile(listed(1)[0].uri, 999, "v2")])  # another size
    again = get(store, item.id)
    assert (again.text, again.duration_ms, again.chunk_count, again.extras) == (
        None,
        None,
        None,
        {},
    )
    with store.unit_of_work(read_only=True) as uow:
        counts = [(c.status, c.items, c.audio_ms) for c in uow.item_queries.status_counts()]
        [row] = uow.item_queries.export_rows()
    assert counts == [("pending", 1, 0)]  # no stale audio hours
    assert (row.text, row.duration_ms, row.chunks) == (None, None, None)


def test_a_changed_file_under_an_expired_lease_takes_the_new_version(
    store: UnitOfWorkFactory,
) -> None:
    register(store, listed(1))
    start = datetime.now(UTC)
    [item] = claim(store, owner="w1", lease_s=5, now=start - timedelta(seconds=60))
    with store.unit_of_work() as uow:
        result = uow.items.register_items(listed(1, version="v2"), language=LANG)
    assert result.changed == 1
    again = get(store, item.id)
    assert (again.status, again.source_version, again.lease_owner) == ("pending", "v2", None)
    with pytest.raises(LeaseLost):  # the late worker's old content is not recorded
        finish(store, item)
    [taken] = claim(store, owner="w2")
    assert (taken.id, taken.source_version) == (item.id, "v2")


def test_register_many_files_in_bulk(store: UnitOfWorkFactory) -> None:
    count = 3 * _IN_BATCH + 7
    with store.unit_of_work() as uow:
        first = uow.items.register_items(listed(count), language=LANG)
    with store.unit_of_work() as uow:
        second = uow.items.register_items(listed(count), language=LANG)
    assert first.new == count
    assert second.unchanged == count


# --- claiming ------------------------------------------------------------------------


def test_claim_takes_oldest_pending_with_a_lease(store: UnitOfWorkFactory) -> None:
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


def test_expired_lease_is_reclaimed_by_another_worker(store: UnitOfWorkFactory) -> None:
    register(store, listed(2))
    start = datetime.now(UTC)
    first = claim(store, owner="w1", lease_s=5, now=start)
    assert claim(store, owner="w2", now=start + timedelta(seconds=4)) == []
    taken = claim(store, owner="w2", now=start + timedelta(seconds=6))
    assert {i.id for i in taken} == {i.id for i in first}
    assert all(i.attempts == 2 and i.lease_owner == "w2" for i in taken)
    with pytest.raises(LeaseLost):
        finish(store, first[0])
    finish(store, taken[0])
    assert get(store, taken[0].id).status == "done"


def test_claim_filters_by_language(store: UnitOfWorkFactory) -> None:
    register(store, listed(2), language="hi")
    register(store, listed(2), language="ta")
    items = claim(store, language="ta")
    assert {i.language for i in items} == {"ta"}
    assert len(claim(store, language=None)) == 2


@pytest.mark.parametrize("extra", [0, 2 * _IN_BATCH], ids=["few-uris", "many-uris"])
def test_claim_restricted_to_uris(store: UnitOfWorkFactory, extra: int) -> None:
    register(store, listed(10, prefix="/other"))
    register(store, listed(30, prefix="/wanted"))
    wanted = [f.uri for f in listed(30, prefix="/wanted")][::3]
    unknown = [f"/nowhere/{i}.wav" for i in range(extra)]
    items = claim(store, limit=4, uris=[*unknown, *wanted])
    assert [i.source_uri for i in items] == wanted[:4]
    rest = claim(store, limit=100, uris=[*wanted, *unknown])
    assert [i.source_uri for i in rest] == wanted[4:]


def test_claim_with_zero_limit_claims_nothing(store: UnitOfWorkFactory) -> None:
    register(store, listed(2))
    assert claim(store, limit=0) == []


def test_release_gives_items_back_without_counting_an_attempt(store: UnitOfWorkFactory) -> None:
    register(store, listed(3))
    items = claim(store, limit=3)
    with store.unit_of_work() as uow:
        uow.claims.release_items([i.lease_token for i in items[:2] if i.lease_token])
        uow.claims.release_items(["not-a-claim-of-ours"])  # not theirs: ignored
    released = [get(store, i.id) for i in items]
    assert [(r.status, r.attempts, r.lease_owner) for r in released] == [
        ("pending", 0, None),
        ("pending", 0, None),
        ("processing", 1, "w1"),
    ]


def test_renew_leases_extends_ours_and_reports_lost_ones(store: UnitOfWorkFactory) -> None:
    register(store, listed(2))
    start = datetime.now(UTC)
    mine = claim(store, owner="w1", lease_s=5, now=start - timedelta(seconds=60))
    stolen = claim(store, owner="w2", limit=1, now=start)  # w1's lease had expired
    with store.unit_of_work() as uow:
        lost = uow.claims.renew_leases([i.lease_token for i in mine if i.lease_token], lease_s=300)
    assert lost == {next(i.lease_token for i in mine if i.id == stolen[0].id)}
    kept = next(i for i in mine if i.id != stolen[0].id)
    renewed = get(store, kept.id)
    assert renewed.lease_expires_at is not None
    assert renewed.lease_expires_at > start + timedelta(seconds=250)


def test_naive_datetimes_are_refused(store: UnitOfWorkFactory) -> None:
    register(store, listed(1))
    with pytest.raises(StoreFailed), store.unit_of_work() as uow:
        uow.claims.claim_batch(
            owner="w", language=LANG, limit=1, lease_s=5, now=datetime(2030, 1, 1)
        )


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
def test_claim_restricted_to_a_source_prefix(
    store: UnitOfWorkFactory, prefix: str, expected
) -> None:
    uris = ["/data/in/a.wav", "/data/in/sub/b.wav", "/data/inbox/c.wav", "/data/in_/d.wav"]
    files = [SourceFile(u, 1, "v1") for u in [*uris, "s3://bucket/x%.wav", "s3://bucket2/y.wav"]]
    register(store, files)
    items = claim(store, limit=10, source_prefix=prefix)
    assert [i.source_uri for i in items] == expected
