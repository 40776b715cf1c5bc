"""A purge takes a note only once its current version is in the record everywhere it
went; its clock is when that version was finished; it never touches a delivery another
process holds nor sets aside one that may be in the record.

Real parts: python-hl7's MLLP listener, the store on SQLite.
"""

from __future__ import annotations

import threading
from collections import deque
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import text as sql

from storage.database import create_store_engine
from storage.interface import UnitOfWorkFactory
from storage.records import WantedDelivery
from storage.versions import item_version
from tasks.retention.durations import parse_retention
from tasks.retention.recording_purge import PurgeRequest, purge_recordings
from tasks.review.decisions import finalize
from tests.flows.prefect_server import wait_until
from tests.service.mllp_listener import MllpListener, running_listener
from tests.tasks.delivery.delivery_helpers import deliver, make_done, rows_of, target_settings

URI = "/d/a.wav"
META = {URI: {"patient_id": "PAT-A"}}
LATER = datetime.now(UTC) + timedelta(days=100)


def _purge(store: UnitOfWorkFactory, tmp_path: Path, *, now: datetime, **overrides):
    values = {"retention": parse_retention("90d"), "actor": "os:officer@host"} | overrides
    return purge_recordings(
        store, PurgeRequest(**values), journal_folder=tmp_path / "journal", now=now
    )


def _correct(store: UnitOfWorkFactory, item_id: int, text: str) -> None:
    with store.unit_of_work() as uow:
        finalize(uow, item_id=item_id, text=text, author="dr.a", base_revision=0)


def _status(store: UnitOfWorkFactory, item_id: int) -> str:
    with store.unit_of_work(read_only=True) as uow:
        item = uow.item_queries.get_item(item_id)
        assert item is not None
        return item.status


def test_a_correction_of_an_old_note_is_not_purged_before_it_is_filed(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str, tmp_path: Path
) -> None:
    with running_listener(MllpListener()) as listener:
        (item,) = make_done(store, {URI: "machine words"}, metadata=META).values()
        target = f"mllp://127.0.0.1:{listener.port}"
        settings = target_settings(devserver_factory(), sqlite_url, target=target)
        assert deliver(settings, store).delivered == 1
        _correct(store, item.id, "corrected words")
        kept = _purge(store, tmp_path, now=LATER, delivery_configured=True)
        assert (kept.total, _status(store, item.id)) == (0, "done")
        assert [(k.reason, k.items) for k in kept.kept] == [("undelivered", 1)]
        assert deliver(settings, store).delivered == 1  # the correction reaches the record
    assert listener.received[-1].obx_lines() == ["corrected words"]
    assert _purge(store, tmp_path, now=LATER, delivery_configured=True).total == 1


def test_the_retention_clock_is_when_the_current_version_was_finished(
    store: UnitOfWorkFactory, sqlite_url: str, tmp_path: Path
) -> None:
    (item,) = make_done(store, {URI: "machine words"}).values()
    _set_done_at(sqlite_url, datetime.now(UTC) - timedelta(days=400))  # an old note
    _correct(store, item.id, "corrected words")  # finished today
    assert _purge(store, tmp_path, now=datetime.now(UTC)).total == 0
    assert _status(store, item.id) == "done"


def test_include_undelivered_never_sets_aside_a_delivery_in_doubt(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str, tmp_path: Path
) -> None:
    with running_listener(MllpListener(script=deque(["none", "none"]))) as listener:
        (item,) = make_done(store, {URI: "machine words"}, metadata=META).values()
        target = f"mllp://127.0.0.1:{listener.port}"
        settings = target_settings(devserver_factory(), sqlite_url, target=target, hl7_resends=1)
        assert deliver(settings, store).in_doubt == 1
    purged = _purge(store, tmp_path, now=LATER, include_undelivered=True)
    (row,) = rows_of(store, item)
    assert (row.status, row.sent_text) == ("in_doubt", "machine words")
    assert (purged.total, _status(store, item.id)) == (0, "done")


def test_a_purge_never_touches_a_delivery_another_process_holds(
    store: UnitOfWorkFactory, tmp_path: Path
) -> None:
    (item,) = make_done(store, {URI: "machine words"}, metadata=META).values()
    with store.unit_of_work() as uow:
        wanted = WantedDelivery(item.id, item.language, item_version(item), "mllp://h:1")
        uow.deliveries.plan_deliveries([wanted], format_name="txt")
    with store.unit_of_work() as uow:  # another deliverer holds it, its request going out
        (held,) = uow.delivery_claims.claim_deliveries(
            owner="other", language=None, limit=1, lease_s=3600, target="mllp://h:1"
        )
        uow.delivery_claims.mark_sending(held.id, lease_token=held.lease_token)
    purged = _purge(store, tmp_path, now=LATER, include_undelivered=True)
    (row,) = rows_of(store, item)
    assert (row.status, row.lease_token) == ("processing", held.lease_token)
    assert (purged.total, _status(store, item.id)) == (0, "done")


def _set_done_at(url: str, when: datetime) -> None:
    engine = create_store_engine(url)
    try:
        with engine.begin() as connection:
            connection.execute(sql("UPDATE items SET done_at = :t, updated_at = :t"), {"t": when})
    finally:
        engine.dispose()


def test_a_purge_during_a_delivery_leaves_the_notes_in_flight_alone(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str, tmp_path: Path
) -> None:
    texts = {f"/d/{n}.wav": f"note {n}" for n in range(3)}
    meta = {uri: {"patient_id": f"PAT-{n}"} for n, uri in enumerate(texts)}
    items = make_done(store, texts, metadata=meta)
    listener = MllpListener(script=deque(["late"] * 3), late_s=1.5)  # slow ACKs
    with running_listener(listener):
        target = f"mllp://127.0.0.1:{listener.port}"
        settings = target_settings(devserver_factory(), sqlite_url, target=target)
        settings = settings.model_copy(
            update={"delivery": settings.delivery.model_copy(update={"hl7_ack_timeout_s": 10})}
        )
        outcome: list[object] = []
        worker = threading.Thread(target=lambda: outcome.append(deliver(settings, store)))
        worker.start()
        wait_until(lambda: listener.received or None, timeout_s=30, what="the first MDM")
        purged = _purge(store, tmp_path, now=LATER, include_undelivered=True)
        worker.join(timeout=60)
    (stats,) = outcome
    assert purged.total == 0
    assert stats.delivered == 3  # type: ignore[attr-defined]
    for item in items.values():
        assert [r.status for r in rows_of(store, item)] == ["delivered"]
        assert _status(store, item.id) == "done"
