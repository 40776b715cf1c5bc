"""What a purge removes and keeps in the store, on SQLite and PostgreSQL."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import create_engine
from sqlalchemy import text as sql

from storage.database import normalize_database_url
from storage.interface import UnitOfWorkFactory
from storage.records import DeliveryStatus, WantedDelivery
from storage.versions import item_version
from tasks.errors import RetentionInvalid
from tasks.retention.durations import parse_retention
from tasks.retention.recording_purge import PurgeRequest, purge_recordings
from tests.tasks.delivery.delivery_helpers import make_done

TEXTS = {
    "/ward/a.wav": "alpha patient Zyxwvut has a fever",
    "/ward/b.wav": "bravo patient Qwertyu takes paracetamol",
    "/ward/c.wav": "charlie patient Asdfghj is held",
}
LATER = datetime.now(UTC) + timedelta(days=100)  # everything finished "100 days ago"


def request(**overrides) -> PurgeRequest:
    values = {"retention": parse_retention("90d"), "actor": "os:officer@host"} | overrides
    return PurgeRequest(**values)


def deliver_rows(store: UnitOfWorkFactory, statuses: dict[int, str]) -> None:
    """One docs delivery per item, settled in `statuses` (its response holds a body)."""
    with store.unit_of_work() as uow:
        items = {i: uow.item_queries.get_item(i) for i in statuses}
        uow.deliveries.plan_deliveries(
            [
                WantedDelivery(item_id=i, language=it.language, version=item_version(it))
                for i, it in items.items()
            ],
            format_name="txt",
        )
    with store.unit_of_work() as uow:
        for row in uow.delivery_claims.claim_deliveries(
            owner="w", language=None, limit=9, lease_s=60
        ):
            status = statuses[row.item_id]
            if status == DeliveryStatus.DELIVERED:
                uow.delivery_claims.record_delivered(
                    row.id, lease_token=row.lease_token, response={"echo": TEXTS["/ward/a.wav"]},
                    format_name="txt", remote_id=f"doc-{row.id}",
                )  # fmt: skip
            else:
                uow.delivery_claims.record_delivery_failed(
                    row.id, lease_token=row.lease_token, error_kind="x", message="refused",
                    retryable=False,
                )  # fmt: skip


def add_chunk(url: str, item_id: int, text: str) -> None:
    engine = create_engine(normalize_database_url(url))
    with engine.begin() as connection:
        connection.execute(
            sql(
                'INSERT INTO chunks (item_id, "index", start_ms, end_ms, size_bytes, status,'
                " text, attempts, updated_at) VALUES (:i, 0, 0, 1000, 10, 'done', :t, 1, :now)"
            ),
            {"i": item_id, "t": text, "now": datetime.now(UTC)},
        )
    engine.dispose()


def test_a_delivered_recording_loses_its_text_and_keeps_its_key_and_hashes(
    audit_store: UnitOfWorkFactory, audit_store_url: str, tmp_path: Path
) -> None:
    items = make_done(audit_store, TEXTS, metadata={"/ward/a.wav": {"patient": "Zyxwvut"}})
    ids = {uri: item.id for uri, item in items.items()}
    a, b = ids["/ward/a.wav"], ids["/ward/b.wav"]
    add_chunk(audit_store_url, a, "alpha patient Zyxwvut")
    deliver_rows(audit_store, {a: "delivered", b: "failed"})  # c: never delivered

    result = purge_recordings(
        audit_store, request(delivery_configured=True), journal_folder=tmp_path, now=LATER
    )

    assert result.total == 1
    assert {(k.reason, k.items) for k in result.kept} == {("undelivered", 2)}
    with audit_store.unit_of_work(read_only=True) as uow:
        purged = uow.item_queries.get_item(a)
        kept = uow.item_queries.get_item(b)
        chunks = uow.chunks.done_chunks(a)
        (delivery,) = uow.deliveries.deliveries_of_item(a)
        receipt = uow.audit.newest_event()
    assert purged is not None
    assert kept is not None
    assert receipt is not None
    assert purged.status == "purged"
    assert (purged.text, purged.metadata, purged.flags) == (None, {}, [])
    assert purged.sha256 == items["/ward/a.wav"].sha256  # the recording's fingerprint stays
    assert purged.source_uri == "/ward/a.wav"
    hashes = purged.extras["purged"]["hmac_sha256"]
    assert set(hashes) >= {"text", "metadata", "chunks", "deliveries"}
    assert purged.extras["purged"]["by"] == "os:officer@host"
    assert chunks == {}
    assert delivery.status == "delivered"
    assert delivery.response is None
    assert delivery.remote_id is not None  # the receiver's id is not patient data
    assert kept.text == TEXTS["/ward/b.wav"]
    assert receipt.action == "purged"
    assert receipt.detail["recordings"] == 1
    assert receipt.detail["n.en-IN.done"] == 1
    assert "Zyxwvut" not in json.dumps(vars(receipt), default=str)
    assert len(receipt.detail["digest"]) == 64


def test_include_undelivered_takes_the_rest_and_settles_their_deliveries(
    audit_store: UnitOfWorkFactory, tmp_path: Path
) -> None:
    items = make_done(audit_store, TEXTS)
    b = items["/ward/b.wav"].id
    deliver_rows(audit_store, {b: "failed"})
    result = purge_recordings(
        audit_store,
        request(include_undelivered=True, delivery_configured=True),
        journal_folder=tmp_path,
        now=LATER,
    )
    assert result.total == 3
    with audit_store.unit_of_work(read_only=True) as uow:
        (delivery,) = uow.deliveries.deliveries_of_item(b)
        assert {c.status: c.items for c in uow.item_queries.status_counts()} == {"purged": 3}
    assert delivery.status == "superseded"  # never sent again
    assert delivery.error_message is None


def test_nothing_younger_than_the_period_and_no_other_language_is_touched(
    audit_store: UnitOfWorkFactory, tmp_path: Path
) -> None:
    make_done(audit_store, TEXTS)
    make_done(audit_store, {"/ward/h.wav": "hindi words"}, language="hi")
    young = purge_recordings(audit_store, request(), journal_folder=tmp_path)
    assert young.total == 0
    dry = purge_recordings(audit_store, request(dry_run=True), journal_folder=tmp_path, now=LATER)
    assert dry.total == 4
    only_hindi = purge_recordings(
        audit_store, request(language="hi"), journal_folder=tmp_path, now=LATER
    )
    assert only_hindi.total == 1
    with audit_store.unit_of_work(read_only=True) as uow:
        counts = {(c.status, c.language): c.items for c in uow.item_queries.status_counts()}
        events = list(uow.audit.chain())
    assert counts == {("done", "en-IN"): 3, ("purged", "hi"): 1}
    assert [e.action for e in events] == ["purge_page", "purged"]  # a dry run writes nothing


def test_journal_entries_of_purged_recordings_go_and_the_others_stay(
    audit_store: UnitOfWorkFactory, tmp_path: Path
) -> None:
    items = make_done(audit_store, TEXTS)
    a = items["/ward/a.wav"].id
    journal = tmp_path / "journal"
    (journal / "deliveries").mkdir(parents=True)
    gone = journal / f"{a}-0-0123456789ab.json"
    gone.write_text(json.dumps({"text": TEXTS["/ward/a.wav"]}))
    stays = journal / "999-0-0123456789ab.json"
    stays.write_text("{}")
    purge_recordings(audit_store, request(language="en-IN"), journal_folder=journal, now=LATER)
    assert not gone.exists()
    assert stays.exists()


@pytest.mark.parametrize(("text", "days"), [("90d", 90), ("12w", 84), ("1y", 365), (" 2D ", 2)])
def test_periods_read_as_people_write_them(text: str, days: int) -> None:
    assert parse_retention(text).days == days


@pytest.mark.parametrize("text", ["90", "d", "0d", "-1d", "1.5w", "1m", "999999y"])
def test_a_period_that_is_not_one_is_refused_with_a_sentence(text: str) -> None:
    with pytest.raises(RetentionInvalid, match="--older-than"):
        parse_retention(text)


def test_a_purged_file_listed_again_keeps_its_receipt_unless_its_size_changed(
    audit_store: UnitOfWorkFactory, tmp_path: Path
) -> None:
    from storage.records import SourceFile
    from tasks.transcription.reuse import decide_reuse, read_reuse_facts

    items = make_done(audit_store, TEXTS)
    purge_recordings(
        audit_store, request(include_undelivered=True), journal_folder=tmp_path, now=LATER
    )
    a, b = items["/ward/a.wav"], items["/ward/b.wav"]
    with audit_store.unit_of_work() as uow:  # touched (same size), and rewritten (new size)
        uow.items.register_items(
            [SourceFile(a.source_uri, 10, "v2"), SourceFile(b.source_uri, 11, "v2")],
            language=a.language,
        )
    with audit_store.unit_of_work() as uow:
        touched, rewritten = uow.item_queries.get_item(a.id), uow.item_queries.get_item(b.id)
        assert touched is not None
        assert rewritten is not None
        assert (touched.status, rewritten.status) == ("pending", "pending")
        assert "purged" in touched.extras
        assert not rewritten.extras
        same = read_reuse_facts(uow, touched, sha256=a.sha256 or "", language=a.language)
        assert decide_reuse(touched, sha256=a.sha256 or "", facts=same).stays_purged
        new = read_reuse_facts(uow, touched, sha256="0" * 64, language=a.language)
        assert not decide_reuse(touched, sha256="0" * 64, facts=new).stays_purged
        assert not decide_reuse(rewritten, sha256=b.sha256 or "", facts=same).stays_purged


def test_a_purge_of_many_pages_writes_one_receipt_for_the_whole_purge(
    audit_store: UnitOfWorkFactory, tmp_path: Path
) -> None:
    make_done(audit_store, TEXTS)
    make_done(audit_store, {"/ward/h.wav": "hindi words"}, language="hi")
    result = purge_recordings(
        audit_store, request(include_undelivered=True), journal_folder=tmp_path, now=LATER, page=2
    )
    with audit_store.unit_of_work(read_only=True) as uow:
        events = list(uow.audit.chain())
    (receipt,) = [e for e in events if e.action == "purged"]
    pages = [e for e in events if e.action == "purge_page"]
    assert [e.detail["page"] for e in pages] == [1, 2]
    assert sum(int(e.detail["recordings"]) for e in pages) == 4
    assert events[-1] == receipt  # after its pages
    assert receipt.detail["recordings"] == 4
    assert receipt.detail["pages"] == 2
    assert (receipt.detail["n.en-IN.done"], receipt.detail["n.hi.done"]) == (3, 1)
    assert receipt.detail["digest"] == result.digest
    assert receipt.detail["purge"] == pages[0].detail["purge"]
    assert receipt.detail["oldest_finished"] <= receipt.detail["newest_finished"]
    assert result.receipts == 1


def test_the_receipt_counts_by_language_and_status_spans_finish_times_and_digests_the_rows(
    audit_store: UnitOfWorkFactory, audit_store_url: str, tmp_path: Path
) -> None:
    from tests.audit.tampering import run_sql

    items = make_done(audit_store, TEXTS) | make_done(audit_store, {"/h.wav": "hi"}, language="hi")
    c = items["/ward/c.wav"].id
    run_sql(audit_store_url, "UPDATE items SET done_at = '2026-01-02 03:04:05'")
    run_sql(
        audit_store_url,
        f"UPDATE items SET status = 'failed', done_at = '2025-12-01' WHERE id = {c}",
    )

    result = purge_recordings(
        audit_store, request(include_undelivered=True), journal_folder=tmp_path, now=LATER, page=2
    )

    with audit_store.unit_of_work(read_only=True) as uow:
        receipt = uow.audit.newest_event(action="purged")
        rows = [uow.item_queries.get_item(i) for i in sorted(item.id for item in items.values())]
    assert receipt is not None
    assert receipt.detail is not None
    counts = {k: v for k, v in receipt.detail.items() if k.startswith("n.")}
    assert counts == {"n.en-IN.done": 2, "n.en-IN.failed": 1, "n.hi.done": 1}
    assert receipt.detail["oldest_finished"] == "2025-12-01T00:00:00+00:00"
    assert receipt.detail["newest_finished"] == "2026-01-02T03:04:05+00:00"
    # The digest is recomputable from what the purged rows keep: SHA-256 over each row's
    # digest of its removed texts' hashes, in id order.
    kept = "".join(row.extras["purged"]["digest"] for row in rows if row is not None)
    assert len(kept) == 4 * 64
    assert receipt.detail["digest"] == hashlib.sha256(kept.encode()).hexdigest() == result.digest


def test_the_trail_outlives_a_purge_with_the_recordings_id_and_path(
    audit_store: UnitOfWorkFactory, tmp_path: Path
) -> None:
    from audit import AuditAction, record_event
    from audit.verify import verify_trail

    items = make_done(audit_store, TEXTS)
    a = items["/ward/a.wav"]
    with audit_store.unit_of_work() as uow:
        record_event(
            uow, action=AuditAction.TRANSCRIPT_VIEWED, actor="alice", item_id=a.id,
            path="ward/a.wav",
        )  # fmt: skip
    with audit_store.unit_of_work(read_only=True) as uow:
        before = list(uow.audit.chain())

    purge_recordings(
        audit_store, request(include_undelivered=True), journal_folder=tmp_path, now=LATER
    )

    with audit_store.unit_of_work(read_only=True) as uow:
        after = list(uow.audit.chain())
        purged = uow.item_queries.get_item(a.id)
    assert purged is not None
    assert purged.status == "purged"
    assert after[: len(before)] == before
    assert (after[0].item_id, after[0].path) == (a.id, "ward/a.wav")
    assert [e.action for e in after[len(before) :]] == ["purge_page", "purged"]
    assert verify_trail(audit_store).whole


def test_a_long_period_is_echoed_whole_or_marked_as_cut() -> None:
    """`99999999999999999999d` was echoed as '99999999999999999999': its unit cut off."""
    with pytest.raises(RetentionInvalid) as refused:
        parse_retention("99999999999999999999d")
    assert refused.value.message.endswith("got '99999999999999999999d'")
    with pytest.raises(RetentionInvalid) as refused:
        parse_retention("9" * 60 + "d")
    assert refused.value.message.endswith("got '" + "9" * 40 + "…'")
