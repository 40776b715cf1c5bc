"""A correction while the old version is in doubt: the old one is settled first, under its
own identifiers, then the new one goes out as its replacement; nothing is hidden.

Real parts: python-hl7's MLLP listener (files each MSH-10 once) and the devserver's FHIR
endpoint (conditional create; the `reset` fault files the resource and loses the answer).
"""

from __future__ import annotations

import asyncio
from collections import deque

from sqlalchemy import text

from devserver import RunningDevServer
from storage.database import create_store_engine
from storage.interface import UnitOfWorkFactory
from tasks.delivery.deliverer import deliver_pending
from tests.service.mllp_listener import MllpListener, running_listener
from tests.tasks.delivery.delivery_helpers import deliver, make_done, rows_of, target_settings

URI = "/d/a.wav"
META = {URI: {"patient_id": "PAT-A"}}


def test_mllp_settles_the_in_doubt_version_then_sends_the_correction_as_its_t10(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    with running_listener(MllpListener(script=deque(["none", "none"]))) as listener:
        (item,) = make_done(store, {URI: "first words"}, metadata=META).values()
        target = f"mllp://127.0.0.1:{listener.port}"
        settings = target_settings(devserver_factory(), sqlite_url, target=target, hl7_resends=1)
        assert deliver(settings, store).in_doubt == 1
        make_done(store, {URI: "corrected words"}, version="v2", metadata=META)
        again = deliver(settings, store)
    first, second = rows_of(store, item)
    assert (first.status, second.status, again.in_doubt) == ("delivered", "delivered", 0)
    assert second.replaces_id == first.id
    old, *resends, new = listener.received
    assert [r.control_id for r in resends] == [old.control_id] * 2  # its own MSH-10
    assert resends[-1].obx_lines() == ["first words"]  # the version it settles
    assert new.field("MSH", 9) == "MDM^T10^MDM_T02"
    assert new.field("TXA", 13) == old.field("TXA", 12)
    assert new.obx_lines() == ["corrected words"]
    assert listener.duplicates == 2  # the engine filed the first version once


def test_fhir_settles_the_in_doubt_version_then_the_correction_replaces_it(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    server: RunningDevServer = devserver_factory(fault_script=("reset", "reset"), retry_after_s=0)
    (item,) = make_done(store, {URI: "first words"}, metadata=META).values()
    settings = target_settings(server, sqlite_url, target=f"fhir+{server.url}/fhir")
    settings = settings.model_copy(
        update={"service": settings.service.model_copy(update={"max_attempts": 2})}
    )
    assert deliver(settings, store).in_doubt == 1
    (filed,) = server.state.fhir.resources.values()  # the receiver has it all the same
    make_done(store, {URI: "corrected words"}, version="v2", metadata=META)
    again = deliver(settings, store)
    first, second = rows_of(store, item)
    assert (first.status, second.status, again.in_doubt) == ("delivered", "delivered", 0)
    assert first.remote_id == f"DocumentReference/{filed['id']}"
    (newer,) = [r for r in server.state.fhir.resources.values() if r["id"] != filed["id"]]
    (relates,) = newer["relatesTo"]
    assert relates["code"] == "replaces"
    assert relates["target"]["reference"] == f"DocumentReference/{filed['id']}"


def test_a_target_that_cannot_deduplicate_waits_for_a_person_before_the_correction(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    server: RunningDevServer = devserver_factory(fault_script=("reset",), retry_after_s=0)
    (item,) = make_done(store, {URI: "first words"}, metadata=META).values()
    settings = target_settings(server, sqlite_url, target="docs")
    settings = settings.model_copy(
        update={"delivery": settings.delivery.model_copy(update={"docs_query": "p={patient_id}"})}
    )
    assert deliver(settings, store).in_doubt == 1
    make_done(store, {URI: "corrected words"}, version="v2", metadata=META)
    waiting = deliver(settings, store)
    first, second = rows_of(store, item)
    assert (first.status, second.status, waiting.delivered) == ("in_doubt", "pending", 0)
    assert waiting.in_doubt == 1  # still said, still counted


def test_a_version_sent_before_its_words_were_kept_waits_for_a_person_then_gives_way(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    with running_listener(MllpListener(script=deque(["none", "none"]))) as listener:
        (item,) = make_done(store, {URI: "first words"}, metadata=META).values()
        target = f"mllp://127.0.0.1:{listener.port}"
        settings = target_settings(devserver_factory(), sqlite_url, target=target, hl7_resends=1)
        assert deliver(settings, store).in_doubt == 1
        _forget_sent_words(sqlite_url)  # as a row sent before 0011_identity
        make_done(store, {URI: "corrected words"}, version="v2", metadata=META)
        waiting = deliver(settings, store)
        first, second = rows_of(store, item)
        assert (first.status, second.status, waiting.in_doubt) == ("in_doubt", "pending", 1)
        assert "--resend-in-doubt" in (first.error_message or "")
        sent_before = len(listener.received)
        decided = asyncio.run(
            deliver_pending(
                settings=settings,
                store=store,
                language=None,
                format_name="txt",
                resend_in_doubt=True,  # a person checked the record
            )
        )
    first, second = rows_of(store, item)
    assert (first.status, second.status, decided.delivered) == ("failed", "delivered", 1)
    assert "a person" in (first.error_message or "")
    assert [r.obx_lines() for r in listener.received[sent_before:]] == [["corrected words"]]


def _forget_sent_words(url: str) -> None:
    engine = create_store_engine(url)
    try:
        with engine.begin() as connection:
            connection.execute(text("UPDATE deliveries SET sent_text = NULL"))
    finally:
        engine.dispose()
