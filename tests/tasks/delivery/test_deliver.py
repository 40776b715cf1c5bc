"""Delivery over real sockets: exactly once per transcript version, the client's rules."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from devserver import RunningDevServer
from storage.interface import UnitOfWorkFactory
from tasks.delivery.deliverer import delivery_summary
from tasks.delivery.identity import NoteKey
from tests.servers import DEVSERVER_JWE_KEY, DEVSERVER_JWE_KID
from tests.tasks.delivery.delivery_helpers import (
    deliver,
    delivery_settings,
    docs_entries,
    make_done,
    rows_of,
    sha_of_text,
)

TEXTS = {
    "/archive/a.wav": "alpha dictation",
    "/archive/sub/b.mp3": "bravo: paracetamol 500 mg",
    "/archive/c.m4a": "नमस्ते charlie",
}

AN_HOUR_AGO = datetime.now(UTC) - timedelta(hours=1)


def test_each_done_transcript_is_delivered_once_and_a_second_run_sends_nothing(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    server: RunningDevServer = devserver_factory()
    items = make_done(store, TEXTS)
    settings = delivery_settings(server, sqlite_url)

    first = deliver(settings, store)
    entries = docs_entries(server)
    assert (first.delivered, first.failed, first.requests) == (3, 0, 3)
    assert Counter(e.sha256 for e in entries) == Counter(sha_of_text(t) for t in TEXTS.values())
    assert {e.filename for e in entries} == {"a.txt", "b.txt", "c.txt"}
    assert all(e.status == 200 and not e.encrypted for e in entries)
    assert sorted(e.bytes for e in entries) == sorted(len(t.encode()) for t in TEXTS.values())
    for item in items.values():
        (row,) = rows_of(store, item)
        assert row.status == "delivered"
        assert row.attempts == 1
        assert row.delivered_at
        assert set(row.response or {}) == {"document_id"}  # the answer, as it came

    second = deliver(settings, store)
    assert (second.planned, second.delivered, second.requests) == (0, 0, 0)
    assert len(docs_entries(server)) == 3  # sent twice: 0


def test_encrypted_upload_carries_the_document_in_a_jwe_envelope(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    server = devserver_factory(jwe_key=DEVSERVER_JWE_KEY, jwe_kid=DEVSERVER_JWE_KID)
    make_done(store, TEXTS)
    stats = deliver(delivery_settings(server, sqlite_url), store)
    entries = docs_entries(server)
    assert stats.delivered == 3
    assert all(e.encrypted and e.status == 200 for e in entries)
    # The devserver decrypted each envelope and base64-decoded its "file": the same bytes.
    assert {e.sha256 for e in entries} == {sha_of_text(t) for t in TEXTS.values()}


def test_a_changed_recording_is_delivered_again_once_and_names_what_it_replaces(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    server = devserver_factory()
    settings = delivery_settings(server, sqlite_url)
    uri = "/archive/a.wav"
    (item,) = make_done(store, {uri: "first words"}).values()
    deliver(settings, store, format_name="fhir")
    make_done(store, {uri: "second words"}, version="v2")  # the file changed, re-transcribed

    stats = deliver(settings, store, format_name="fhir")
    again = deliver(settings, store, format_name="fhir")

    first, second = rows_of(store, item)
    assert first.format == second.format == "fhir"
    assert (stats.delivered, again.delivered) == (1, 0)
    assert first.status == second.status == "delivered"
    assert second.replaces_id == first.id
    assert first.version != second.version
    assert len(docs_entries(server)) == 2
    # The FHIR document of the new version says which one it replaces.
    document = json.loads(_last_fhir_upload(server, store, settings))
    (relation,) = document["relatesTo"]
    assert relation["code"] == "replaces"
    assert relation["target"]["identifier"]["value"] == first.document_id


def _last_fhir_upload(server, store, settings) -> bytes:
    """Rebuild the second version's document the way deliver did (the ledger keeps no body)."""
    from tasks.delivery.documents import build_document, note_of, parse_docs_query

    with store.unit_of_work(read_only=True) as uow:
        (item,) = uow.item_queries.done_items_page(language=None, after_id=0, limit=5)
        rows = uow.deliveries.deliveries_of_item(item.id)
        key = NoteKey(uow.deliveries.store_identity(), item.id, item.language, rows[-1].version)
    note = note_of(
        item, key=key, document_id=rows[-1].document_id, replaces_document_id=rows[0].document_id
    )
    document = build_document(
        item, note, format_name="fhir", query=parse_docs_query(""), note_code="11506-3"
    )
    entries = docs_entries(server)
    assert entries[-1].sha256 == sha_of_text(document.content.decode())  # what was sent
    return document.content


def test_the_query_template_is_filled_per_recording_and_a_missing_field_costs_one_row(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    server = devserver_factory()
    metadata = {
        "/archive/a.wav": {"patient_id": "P-001", "doc_type": "progress note"},
        "/archive/sub/b.mp3": {"patient_id": "P-002"},  # no doc_type
        "/archive/c.m4a": {"patient_id": "P&3", "doc_type": "x=y"},
    }
    items = make_done(store, TEXTS, metadata=metadata)
    settings = delivery_settings(
        server, sqlite_url, docs_query="patient_id={patient_id}&dt={doc_type}&src=medasr"
    )
    stats = deliver(settings, store)
    queries = sorted(e.query for e in docs_entries(server))
    assert queries == [
        "patient_id=P%263&dt=x%3Dy&src=medasr",
        "patient_id=P-001&dt=progress+note&src=medasr",
    ]
    assert (stats.delivered, stats.failed) == (2, 1)
    (row,) = rows_of(store, items["/archive/sub/b.mp3"])
    assert row.status == "failed"
    assert row.error_kind == "metadata_missing"
    assert "doc_type" in (row.error_message or "")
    assert row.retryable
    assert delivery_summary(stats)["exit_code"] == 1


def test_rejected_credentials_stop_the_delivery_and_leave_the_rest_pending(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    server = devserver_factory(auth_fail_after=1)
    items = make_done(store, {f"/archive/{i}.wav": f"text {i}" for i in range(8)})
    settings = delivery_settings(server, sqlite_url)
    settings = settings.model_copy(
        update={"pipeline": settings.pipeline.model_copy(update={"concurrency": 1})}
    )
    stats = deliver(settings, store)
    summary = delivery_summary(stats)
    assert summary["credentials_rejected"]
    assert summary["exit_code"] == 3
    statuses = Counter(rows_of(store, item)[0].status for item in items.values())
    assert statuses == {"delivered": 1, "pending": 7}
    assert [e.status for e in docs_entries(server)] == [200, 403]


def test_a_document_refused_as_too_large_is_recorded_not_retried(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    server = devserver_factory(max_bytes=400)
    items = make_done(store, {"/archive/big.wav": "word " * 200, "/archive/s.wav": "short"})
    stats = deliver(delivery_settings(server, sqlite_url), store)
    (row,) = rows_of(store, items["/archive/big.wav"])
    assert row.status == "failed"
    assert row.error_kind == "payload_too_large"
    assert not row.retryable
    assert (stats.delivered, stats.failed) == (1, 1)
    assert [e.status for e in docs_entries(server)].count(413) == 1


def test_throttling_is_retried_after_the_servers_retry_after(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    server = devserver_factory(fault_script=("429", "503"), retry_after_s=1)
    (item,) = make_done(store, {"/archive/a.wav": "alpha"}).values()
    stats = deliver(delivery_settings(server, sqlite_url), store)
    entries = docs_entries(server)
    assert [e.status for e in entries] == [429, 503, 200]
    assert entries[1].time - entries[0].time >= 0.95  # waited for Retry-After
    assert (stats.delivered, stats.retries, stats.requests) == (1, 2, 3)
    assert rows_of(store, item)[0].status == "delivered"


def test_a_transient_failure_is_retried_on_the_next_run(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    server = devserver_factory(fault_script=("503", "503", "503"))  # 3 attempts, 3 x 503
    (item,) = make_done(store, {"/archive/a.wav": "alpha"}).values()
    settings = delivery_settings(server, sqlite_url, max_attempts=3)
    first = deliver(settings, store)
    assert first.failed == 1
    assert rows_of(store, item)[0].retryable
    second = deliver(settings, store)
    assert (second.requeued, second.delivered) == (1, 1)
    assert [e.status for e in docs_entries(server)] == [503, 503, 503, 200]


def test_a_lease_held_by_a_live_worker_is_left_alone_and_an_expired_one_is_taken(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    server = devserver_factory()
    items = make_done(store, {"/archive/a.wav": "alpha", "/archive/b.wav": "bravo"})
    settings = delivery_settings(server, sqlite_url)
    from tasks.delivery.deliverer import plan_deliveries

    plan_deliveries(store, language=None, format_name="txt", max_attempts=3)
    with store.unit_of_work() as uow:
        (live,) = uow.delivery_claims.claim_deliveries(
            owner="other", language=None, limit=1, lease_s=600
        )
    with store.unit_of_work() as uow:
        (stale,) = uow.delivery_claims.claim_deliveries(  # a lease that lapsed an hour ago
            owner="dead", language=None, limit=1, lease_s=60, now=AN_HOUR_AGO
        )
    stats = deliver(settings, store)
    assert stats.delivered == 1
    assert [e.sha256 for e in docs_entries(server)] == [sha_of_text("bravo")]
    assert {live.item_id, stale.item_id} == {i.id for i in items.values()}
    with store.unit_of_work() as uow:
        from storage.errors import LeaseLost

        with pytest.raises(LeaseLost):  # the dead worker comes back too late
            uow.delivery_claims.record_delivered(
                stale.id, lease_token=stale.lease_token, response={}
            )


def test_logs_carry_no_transcript_and_no_token(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    server = devserver_factory(fault_script=("429",), retry_after_s=0)
    make_done(store, {"/archive/a.wav": "secret diagnosis words"})
    caplog.set_level("DEBUG")
    assert deliver(delivery_settings(server, sqlite_url), store).delivered == 1
    assert "secret diagnosis" not in caplog.text
    assert server.token not in caplog.text


def test_rows_of_a_killed_local_deliverer_are_taken_back_at_once(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    import subprocess
    import sys

    from storage.owners import local_host_id
    from tasks.delivery.deliverer import plan_deliveries

    server = devserver_factory()
    make_done(store, {"/archive/a.wav": "alpha", "/archive/b.wav": "bravo"})
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    dead_owner = f"{local_host_id()}:{child.pid}:feedbeef"
    plan_deliveries(store, language=None, format_name="txt", max_attempts=3)
    with store.unit_of_work() as uow:
        assert (
            len(
                uow.delivery_claims.claim_deliveries(
                    owner=dead_owner, language=None, limit=5, lease_s=900
                )
            )
            == 2
        )
    stats = deliver(delivery_settings(server, sqlite_url), store)
    assert stats.delivered == 2  # no 900 s wait for the dead process's lease


def test_a_bug_on_one_document_costs_that_document_only(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tasks.delivery.builders  # the docs sender's document is built there

    real = tasks.delivery.builders.build_document

    def broken_for_b(item, *args, **kwargs):
        if item.source_uri.endswith("b.mp3"):
            raise KeyError("a bug")  # nothing a socket can provoke
        return real(item, *args, **kwargs)

    monkeypatch.setattr(tasks.delivery.builders, "build_document", broken_for_b)
    server = devserver_factory()
    items = make_done(store, TEXTS)
    stats = deliver(delivery_settings(server, sqlite_url), store)
    assert (stats.delivered, stats.failed) == (2, 1)
    (row,) = rows_of(store, items["/archive/sub/b.mp3"])
    assert row.status == "failed"
    assert row.error_kind == "internal_error"


def test_a_version_set_aside_before_it_was_sent_is_delivered_when_it_comes_back(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    from tasks.delivery.deliverer import plan_deliveries

    server = devserver_factory()
    uri = "/archive/a.wav"
    (item,) = make_done(store, {uri: "first"}).values()
    plan_deliveries(store, language=None, format_name="txt", max_attempts=3)
    make_done(store, {uri: "second"}, version="v2")
    plan_deliveries(store, language=None, format_name="txt", max_attempts=3)
    assert [r.status for r in rows_of(store, item)] == ["superseded", "pending"]
    make_done(store, {uri: "first"}, version="v1")  # the old file is put back
    stats = deliver(delivery_settings(server, sqlite_url), store)
    assert [r.status for r in rows_of(store, item)] == ["delivered", "superseded"]
    assert stats.delivered == 1
    assert [e.sha256 for e in docs_entries(server)] == [sha_of_text("first")]


def test_delivery_names_recordings_by_their_path_in_the_source_with_controls_escaped(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    server = devserver_factory()
    make_done(store, {"/archive/in\x1b[31mred.wav": "one", "/archive/sub/b.wav": "two"})
    with store.unit_of_work() as uow:
        uow.runs.start_run(source="/archive", language="en-IN")
    caplog.set_level("INFO", logger="medasr.deliver")
    deliver(delivery_settings(server, sqlite_url), store)
    said = "\n".join(r.getMessage() for r in caplog.records if r.name == "medasr.deliver")
    assert "\x1b" not in said
    assert "in\\u001b[31mred.wav" in said
    assert "delivered sub/b.wav" in said
    assert "/archive/" not in said


def test_an_accepted_upload_the_store_cannot_record_is_journaled_then_recorded_not_resent(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str, tmp_path, monkeypatch
) -> None:
    from storage.delivery_claims import DeliveryClaims
    from storage.errors import StoreUnavailable

    server = devserver_factory()
    items = make_done(store, {"/archive/a.wav": "alpha"})
    settings = delivery_settings(server, sqlite_url)
    storage = settings.storage.model_copy(
        update={"data_dir": tmp_path / "data", "store_retry_s": 0.3}
    )
    settings = settings.model_copy(update={"storage": storage})
    original = DeliveryClaims.record_delivered

    def down(*_args: object, **_kwargs: object) -> None:
        raise StoreUnavailable("server closed the connection")

    monkeypatch.setattr(DeliveryClaims, "record_delivered", down)
    deliver(settings, store)
    kept = list((tmp_path / "data" / "journal" / "deliveries").glob("*.json"))
    assert len(kept) == 1
    assert oct(kept[0].stat().st_mode & 0o777) == oct(0o600)
    monkeypatch.setattr(DeliveryClaims, "record_delivered", original)
    stats = deliver(settings, store)  # the next start records it from the journal
    (row,) = rows_of(store, items["/archive/a.wav"])
    assert row.status == "delivered"
    assert row.remote_id is not None
    assert stats.delivered == 0
    assert len(docs_entries(server)) == 1  # filed once, never sent again
    assert not kept[0].exists()


def test_a_connection_lost_after_sending_leaves_the_delivery_in_doubt_not_failed(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    server = devserver_factory(rate_reset=1.0)  # every upload read, then the line drops
    items = make_done(store, {"/archive/a.wav": "alpha"})
    stats = deliver(delivery_settings(server, sqlite_url, max_attempts=1), store)
    summary = delivery_summary(stats)
    (row,) = rows_of(store, items["/archive/a.wav"])
    assert row.status == "in_doubt"
    assert (stats.in_doubt, stats.failed, summary["exit_code"]) == (1, 0, 1)
    uploads = len(docs_entries(server))
    again = deliver(delivery_settings(server, sqlite_url, max_attempts=1), store)
    assert again.requests == 0  # never re-sent without a person's word
    assert len(docs_entries(server)) == uploads


def test_an_accepted_upload_whose_answer_cannot_be_read_is_in_doubt_not_failed(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    # A 200 with a proxy's HTML page: the service took the document, so the patient record
    # may hold it; "failed" would tell a person it is not there.
    server = devserver_factory(rate_badjson=1.0)
    items = make_done(store, {"/archive/a.wav": "alpha"})
    stats = deliver(delivery_settings(server, sqlite_url, max_attempts=1), store)
    (row,) = rows_of(store, items["/archive/a.wav"])
    assert (row.status, stats.in_doubt, stats.failed) == ("in_doubt", 1, 0)
    assert "HTTP 200" in (row.error_message or "")
    again = deliver(delivery_settings(server, sqlite_url, max_attempts=1), store)
    assert again.requests == 0  # the docs upload files every copy: a person decides
    assert len(docs_entries(server)) == 1


def test_the_lease_keeper_renews_a_delivery_whose_answer_takes_longer_than_its_lease(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str, monkeypatch
) -> None:
    import threading

    from storage.delivery_claims import DeliveryClaims
    from storage.records import DeliveryRecord

    server = devserver_factory(latency_ms=7000)  # longer than the 5 s lease
    items = make_done(store, {"/archive/a.wav": "alpha"})
    settings = delivery_settings(server, sqlite_url, request_timeout_s=30)
    storage = settings.storage.model_copy(update={"lease_s": 5})
    settings = settings.model_copy(update={"storage": storage})
    taken, doubted, done, held = [], [], threading.Event(), threading.Event()
    claim_deliveries = DeliveryClaims.claim_deliveries

    def claim_and_tell(self: DeliveryClaims, **kwargs: Any) -> list[DeliveryRecord]:
        claimed = claim_deliveries(self, **kwargs)
        if claimed and kwargs["owner"] != "rival":
            held.set()  # the deliverer's claim commits before the rival's write can begin
        return claimed

    monkeypatch.setattr(DeliveryClaims, "claim_deliveries", claim_and_tell)

    def rival() -> None:  # another deliverer, looking for lapsed leases once we hold it
        if not held.wait(timeout=60):
            return
        while not done.is_set():
            with store.unit_of_work() as uow:
                counts = {c.status: c.rows for c in uow.deliveries.delivery_counts()}
                doubted.append(counts.get("in_doubt", 0))
                taken.extend(
                    uow.delivery_claims.claim_deliveries(
                        owner="rival", language=None, limit=1, lease_s=60
                    )
                )
            done.wait(0.3)

    watcher = threading.Thread(target=rival)
    watcher.start()
    try:
        stats = deliver(settings, store)
    finally:
        done.set()
        watcher.join()
    assert held.is_set()
    assert taken == []
    assert max(doubted) == 0  # never lapsed: the rival could not even doubt it
    assert stats.delivered == 1
    (row,) = rows_of(store, items["/archive/a.wav"])
    assert row.status == "delivered"


def test_a_failed_delivery_is_logged_with_its_recording_named_inside_the_source(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    server = devserver_factory()
    make_done(store, {"/archive/ward\n7/c.wav": "charlie"})
    with store.unit_of_work() as uow:
        uow.runs.start_run(source="/archive", language="en-IN")
    caplog.set_level("INFO", logger="medasr.deliver")
    deliver(delivery_settings(server, sqlite_url, docs_query="patient_id={patient_id}"), store)
    said = [r.getMessage() for r in caplog.records if r.name == "medasr.deliver"]
    assert any("ward\\n7/c.wav" in line for line in said), said
    assert not any("/archive/" in line or "\n" in line for line in said), said


def test_the_docs_client_never_resends_an_upload_the_receiver_may_have_filed(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    # The client's own retries sit below the in-doubt judgement: with attempts to spare,
    # a dropped line after the upload was read must still cost one upload, not three.
    server = devserver_factory(rate_reset=1.0)
    items = make_done(store, {"/archive/a.wav": "alpha"})
    stats = deliver(delivery_settings(server, sqlite_url, max_attempts=3), store)
    (row,) = rows_of(store, items["/archive/a.wav"])
    assert row.status == "in_doubt"
    assert len(docs_entries(server)) == 1
    assert (stats.requests, stats.retries) == (1, 0)
