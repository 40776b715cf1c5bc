"""Whatever the current version of a note is, every target that holds another version
receives it as the replacement of the one it holds, even when its words equal an
earlier version's (a correction undone, a file restored to its earlier content).

Real parts: python-hl7's MLLP listener and the devserver's FHIR endpoint.
"""

from __future__ import annotations

from devserver import RunningDevServer
from storage.interface import UnitOfWorkFactory
from tests.service.mllp_listener import MllpListener, running_listener
from tests.tasks.delivery.delivery_helpers import deliver, make_done, rows_of, target_settings

URI = "/d/a.wav"
META = {URI: {"patient_id": "PAT-A"}}


def test_mllp_a_version_back_to_earlier_words_replaces_the_one_the_engine_holds(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    with running_listener(MllpListener()) as listener:
        (item,) = make_done(store, {URI: "machine words"}, metadata=META).values()
        target = f"mllp://127.0.0.1:{listener.port}"
        settings = target_settings(devserver_factory(), sqlite_url, target=target)
        assert deliver(settings, store).delivered == 1
        make_done(store, {URI: "corrected words"}, version="v2", metadata=META)
        assert deliver(settings, store).delivered == 1
        make_done(store, {URI: "machine words"}, version="v1", metadata=META)  # restored
        back = deliver(settings, store)
        assert deliver(settings, store).delivered == 0  # and once only
    assert back.delivered == 1
    first, second, third = listener.received
    assert third.field("MSH", 9) == "MDM^T10^MDM_T02"
    assert third.field("TXA", 13) == second.field("TXA", 12)
    assert third.obx_lines() == ["machine words"]
    assert third.control_id not in (first.control_id, second.control_id)
    assert third.field("TXA", 12) not in (first.field("TXA", 12), second.field("TXA", 12))
    rows = rows_of(store, item)
    assert [r.status for r in rows] == ["delivered"] * 3
    assert rows[2].replaces_id == rows[1].id


def test_fhir_a_version_back_to_earlier_words_replaces_the_resource_the_server_holds(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    server: RunningDevServer = devserver_factory()
    make_done(store, {URI: "machine words"}, metadata=META)
    settings = target_settings(server, sqlite_url, target=f"fhir+{server.url}/fhir")
    assert deliver(settings, store).delivered == 1
    make_done(store, {URI: "corrected words"}, version="v2", metadata=META)
    assert deliver(settings, store).delivered == 1
    (corrected,) = [r for r in server.state.fhir.resources.values() if r.get("relatesTo")]
    make_done(store, {URI: "machine words"}, version="v1", metadata=META)
    assert deliver(settings, store).delivered == 1
    resources = list(server.state.fhir.resources.values())
    assert len(resources) == 3
    (newest,) = [
        r
        for r in resources
        if r.get("relatesTo")
        and r["relatesTo"][0]["target"]["reference"] == f"DocumentReference/{corrected['id']}"
    ]
    assert newest["relatesTo"][0]["code"] == "replaces"
