"""Every command that touches PHI writes its events: who, what, which recording, where to,
and never a word of the transcript."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from typer.testing import CliRunner

from audit import command_actor
from flows.cli import app
from storage.audit_records import AuditEvent
from storage.interface import UnitOfWorkFactory
from storage.sources import SourceFile
from tasks.transcription.bookkeeping import requeue_failed
from tests.tasks.delivery.delivery_helpers import (
    deliver,
    delivery_settings,
    make_done,
    rows_of,
)

TEXTS = {
    "/archive/a.wav": "alpha dictation about the patient",
    "/archive/sub/b.mp3": "bravo: paracetamol 500 mg",
}


def trail(store: UnitOfWorkFactory) -> list[AuditEvent]:
    with store.unit_of_work(read_only=True) as uow:
        return list(uow.audit.chain())


def assert_no_text(events: list[AuditEvent], *texts: str) -> None:
    dumped = json.dumps([vars(e) for e in events], default=str)
    for text in texts:
        for word in text.split():
            if len(word) > 4:
                assert word not in dumped


def _run_source(store: UnitOfWorkFactory, source: str = "/archive") -> None:
    with store.unit_of_work() as uow:
        uow.runs.start_run(source=source, language="en-IN")


def test_each_delivery_is_an_event_with_its_target_and_the_receivers_id(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    server = devserver_factory()
    _run_source(store)
    items = make_done(store, TEXTS)
    deliver(delivery_settings(server, sqlite_url), store)
    events = trail(store)
    assert Counter(e.action for e in events) == {"delivered": 2}
    for event in events:
        (row,) = [
            r
            for item in items.values()
            for r in rows_of(store, item)
            if r.id == event.detail["delivery_id"]
        ]
        assert event.item_id == row.item_id
        assert event.target == "docs"
        assert event.actor == command_actor()
        assert event.detail["receiver_id"] == row.remote_id
        assert event.detail["format"] == "txt"
    assert {e.path for e in events} == {"a.wav", "sub/b.mp3"}
    assert_no_text(events, *TEXTS.values())
    deliver(delivery_settings(server, sqlite_url), store)  # nothing left to send
    assert len(trail(store)) == 2


def test_a_delivery_failed_for_good_is_an_event_and_a_retryable_one_is_not(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    server = devserver_factory(max_bytes=400)
    make_done(store, {"/archive/big.wav": "word " * 200, "/archive/s.wav": "short"})
    deliver(delivery_settings(server, sqlite_url), store)
    assert Counter(e.action for e in trail(store)) == {"delivered": 1, "delivery_failed": 1}
    (failed,) = [e for e in trail(store) if e.action == "delivery_failed"]
    assert failed.path == "/archive/big.wav"  # no run recorded: the full name
    assert "receiver_id" not in failed.detail

    other = devserver_factory(fault_script=("503", "503", "503"))
    make_done(store, {"/archive/t.wav": "transient"})
    deliver(delivery_settings(other, sqlite_url, max_attempts=3), store)
    assert Counter(e.action for e in trail(store))["delivery_failed"] == 1


def test_a_retryable_delivery_failure_out_of_attempts_is_an_event(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    server = devserver_factory(fault_script=("503",) * 4)
    (item,) = make_done(store, {"/archive/t.wav": "transient"}).values()
    settings = delivery_settings(server, sqlite_url, max_attempts=2)
    deliver(settings, store)  # two 503s: failed, one more run may try
    assert "delivery_failed" not in Counter(e.action for e in trail(store))
    deliver(settings, store)  # two more: its attempts are spent, it is failed for good
    (row,) = rows_of(store, item)
    assert (row.status, row.retryable, row.attempts) == ("failed", True, 2)
    (failed,) = [e for e in trail(store) if e.action == "delivery_failed"]
    assert (failed.item_id, failed.target) == (item.id, "docs")
    assert failed.detail["delivery_id"] == row.id
    deliver(settings, store)  # nothing left to try: no second event
    assert Counter(e.action for e in trail(store))["delivery_failed"] == 1


def test_a_delivery_recorded_from_the_journal_is_an_event(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str, tmp_path: Path
) -> None:
    from storage.records import WantedDelivery
    from storage.versions import item_version
    from tasks.work.journal import AcceptedDelivery, Journal

    server = devserver_factory()
    (item,) = make_done(store, {"/archive/a.wav": "alpha"}).values()
    with store.unit_of_work() as uow:  # sent; the store went down before it was recorded
        wanted = WantedDelivery(item_id=item.id, language=item.language, version=item_version(item))
        uow.deliveries.plan_deliveries([wanted], format_name="txt")
        (row,) = uow.delivery_claims.claim_deliveries(
            owner="gone", language=None, limit=1, lease_s=60
        )
    settings = delivery_settings(server, sqlite_url)
    settings.storage.data_dir = tmp_path
    accepted = AcceptedDelivery(row.id, row.version, {"id": "doc-77"}, remote_id="doc-77")
    Journal.in_data_dir(tmp_path).keep(accepted)
    deliver(settings, store)  # the next start records it from the journal
    assert rows_of(store, item)[0].status == "delivered"
    (event,) = trail(store)
    assert (event.action, event.item_id, event.target) == ("delivered", item.id, "docs")
    assert event.detail["receiver_id"] == "doc-77"
    assert event.actor == command_actor()


def test_a_delivery_in_doubt_is_an_event(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    server = devserver_factory(rate_reset=1.0)  # every upload read, then the line drops
    (item,) = make_done(store, {"/archive/a.wav": "alpha"}).values()
    deliver(delivery_settings(server, sqlite_url, max_attempts=1), store)
    (event,) = trail(store)
    assert (event.action, event.item_id, event.target) == ("delivery_in_doubt", item.id, "docs")
    assert rows_of(store, item)[0].status == "in_doubt"


def test_resending_in_doubt_deliveries_is_a_resent_event_each(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    import asyncio

    from tasks.delivery.deliverer import deliver_pending

    dropping = devserver_factory(rate_reset=1.0)
    items = make_done(store, {"/archive/a.wav": "alpha", "/archive/b.wav": "bravo"})
    deliver(delivery_settings(dropping, sqlite_url, max_attempts=1), store)
    deliver(delivery_settings(dropping, sqlite_url, max_attempts=1), store)  # a plain run
    assert Counter(e.action for e in trail(store)) == {"delivery_in_doubt": 2}
    settings = delivery_settings(devserver_factory(), sqlite_url)
    asyncio.run(
        deliver_pending(
            settings=settings,
            store=store,
            language=None,
            format_name="txt",
            resend_in_doubt=True,
            allow_unlinked=True,
        )
    )
    resent = [e for e in trail(store) if e.action == "resent"]
    assert sorted(e.item_id for e in resent) == sorted(i.id for i in items.values())
    assert {(e.target, e.actor) for e in resent} == {("docs", command_actor())}
    rows = {r.id for item in items.values() for r in rows_of(store, item)}
    assert {e.detail["delivery_id"] for e in resent} == rows
    assert Counter(e.action for e in trail(store))["delivered"] == 2


def test_an_export_is_one_event_with_its_path_format_and_count(
    runner: CliRunner, store: UnitOfWorkFactory, tmp_path: Path
) -> None:
    make_done(store, TEXTS)
    out = tmp_path / "out.csv"
    assert runner.invoke(app, ["export", "--format", "csv", "--out", str(out)]).exit_code == 0
    assert runner.invoke(app, ["export", "--format", "txt", "--out", "tree"]).exit_code == 0
    first, second = trail(store)
    assert (first.action, first.target, first.actor) == ("exported", str(out), command_actor())
    assert first.detail == {
        "format": "csv",
        "records": 2,
        "refused": 0,
        "status": "any",
        "language": "any",
    }
    assert (second.target, second.detail["format"]) == (str(tmp_path / "tree"), "txt")
    assert_no_text([first, second], *TEXTS.values())


def test_review_decisions_are_events_committed_with_them(
    runner: CliRunner, store: UnitOfWorkFactory
) -> None:
    _run_source(store, "/a")
    with store.unit_of_work() as uow:
        uow.items.register_items(
            [SourceFile(f"/a/{n}.wav", 10, "v1") for n in "xyz"], language="en-IN"
        )
        claimed = uow.claims.claim_batch(owner="w", language="en-IN", limit=9, lease_s=60)
    with store.unit_of_work() as uow:
        for item in claimed:
            uow.claims.finish_item(
                item.id, lease_token=item.lease_token, text="secret words here",
                duration_ms=1000, chunk_count=1, extras={}, flags=["repetition"],
            )  # fmt: skip
    ids = {Path(i.source_uri).stem: i.id for i in claimed}
    result = runner.invoke(app, ["review", "--accept", str(ids["x"]), "--resend", str(ids["y"])])
    assert result.exit_code == 0, result.output
    events = trail(store)
    assert [(e.action, e.item_id, e.path) for e in events] == [
        ("accepted", ids["x"], "x.wav"),
        ("sent_back", ids["y"], "y.wav"),
    ]
    # One unknown ID: nothing decided, nothing recorded.
    assert (
        runner.invoke(app, ["review", "--accept", str(ids["z"]), "--accept", "999"]).exit_code == 2
    )
    assert len(trail(store)) == 2


def test_rerun_with_skipped_recordings_is_one_event_for_the_command(
    store: UnitOfWorkFactory,
) -> None:
    with store.unit_of_work() as uow:
        uow.items.register_items(
            [SourceFile(f"/s/{n}.wav", 10, "v1") for n in range(3)], language="en-IN"
        )
        claimed = uow.claims.claim_batch(owner="w", language="en-IN", limit=9, lease_s=60)
    with store.unit_of_work() as uow:
        for item in claimed:
            uow.claims.skip_item(
                item.id, lease_token=item.lease_token, reason_kind="silent", reason="silent"
            )
    assert requeue_failed(store, language="en-IN", max_attempts=3, include_permanent=False) == 0
    assert trail(store) == []  # nothing re-queued, nothing to say
    count = requeue_failed(
        store, language="en-IN", max_attempts=3, include_permanent=False, include_skipped=True
    )
    (event,) = trail(store)
    assert count == 3
    assert (event.action, event.target, event.item_id) == ("requeued", "en-IN", None)
    assert event.detail == {"recordings": 3, "include_permanent": 0, "include_skipped": 1}
