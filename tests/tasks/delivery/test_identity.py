"""Whose note: a filed transcript is known by its recording, its store and its patient.

Real parts: python-hl7's MLLP listener on loopback (files each MSH-10 once) and the
devserver's FHIR endpoint, which answers a conditional create that matches with 200 and
the resource it already holds, as a real server does.
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import replace
from pathlib import Path

import pytest

from config.settings import StorageSettings
from storage import open_store
from storage.interface import UnitOfWorkFactory
from tasks.delivery.identity import NoteKey, message_control_id, note_urn, txa_12
from tests.service.mllp_listener import MllpListener, running_listener
from tests.tasks.delivery.delivery_helpers import (
    LANG,
    deliver,
    make_done,
    rows_of,
    target_settings,
)

WORDS = "Ward round: stable, continue the plan."
COPIES = {"/d/bed1-patientA.mp3": WORDS, "/d/bed2-patientB.mp3": WORDS}
PATIENTS = {
    "/d/bed1-patientA.mp3": {"patient_id": "PAT-A"},
    "/d/bed2-patientB.mp3": {"patient_id": "PAT-B"},
}


def test_two_copies_for_two_patients_are_two_mdm_documents(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    with running_listener() as listener:
        make_done(store, COPIES, metadata=PATIENTS, same_audio=True)
        target = f"mllp://127.0.0.1:{listener.port}"
        stats = deliver(target_settings(devserver_factory(), sqlite_url, target=target), store)
    assert stats.delivered == 2
    numbers = {r.field("PID", 3): r.field("TXA", 12) for r in listener.received}
    assert set(numbers) == {"PAT-A", "PAT-B"}
    assert numbers["PAT-A"] != numbers["PAT-B"]
    assert sorted(listener.documents_filed().values()) == [1, 1]


def test_two_copies_for_two_patients_are_two_fhir_resources_each_with_its_subject(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    server = devserver_factory()
    items = make_done(store, COPIES, metadata=PATIENTS, same_audio=True)
    settings = target_settings(server, sqlite_url, target=f"fhir+{server.url}/fhir")
    stats = deliver(settings, store)
    assert stats.delivered == 2
    resources = list(server.state.fhir.resources.values())
    subjects = sorted(r["subject"]["identifier"]["value"] for r in resources)
    assert subjects == ["PAT-A", "PAT-B"]
    remote = {uri: rows_of(store, item)[-1].remote_id for uri, item in items.items()}
    assert len(set(remote.values())) == 2


def test_two_stores_never_share_a_control_id_or_a_document_number(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str, tmp_path: Path
) -> None:
    other_url = f"sqlite:///{tmp_path / 'other-site.db'}"
    other = open_store(StorageSettings(database_url=other_url))
    server = devserver_factory()
    try:
        with running_listener() as listener:
            target = f"mllp://127.0.0.1:{listener.port}"
            for url, each, patient in ((sqlite_url, store, "PAT-A"), (other_url, other, "PAT-B")):
                uri = "/d/note.wav"
                make_done(
                    each, {uri: f"note of {patient}"}, metadata={uri: {"patient_id": patient}}
                )
                assert deliver(target_settings(server, url, target=target), each).delivered == 1
    finally:
        other.dispose()
    first, second = listener.received
    assert first.control_id != second.control_id
    assert first.field("TXA", 12) != second.field("TXA", 12)
    assert listener.duplicates == 0
    assert len(listener.filed) == 2


def test_a_new_attempt_series_has_a_new_control_id_and_resends_keep_theirs(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    uri = "/d/a.wav"
    # AE (a definitive answer: a new series next time), then a lost ACK resent, then AA.
    script = deque(["AE", "none", "AA"])
    with running_listener(MllpListener(script=script)) as listener:
        make_done(store, {uri: "words"}, metadata={uri: {"patient_id": "PAT-A"}})
        target = f"mllp://127.0.0.1:{listener.port}"
        settings = target_settings(devserver_factory(), sqlite_url, target=target)
        assert deliver(settings, store).failed == 1
        assert deliver(settings, store).delivered == 1
    ae, lost, resent = (r.control_id for r in listener.received)
    assert lost == resent  # one series: a resend carries its control ID
    assert ae != lost  # a new series after a definitive answer
    assert all(len(c) <= 20 for c in (ae, lost))  # HL7 2.5.1 MSH-10: ST, 20 characters


def test_identifiers_are_stable_and_distinct_where_the_contract_says() -> None:
    control = message_control_id(store_id="7Q2M9XKA", delivery_id=7, series=0)
    assert control == message_control_id(store_id="7Q2M9XKA", delivery_id=7, series=0)
    assert control != message_control_id(store_id="7Q2M9XKB", delivery_id=7, series=0)
    assert control != message_control_id(store_id="7Q2M9XKA", delivery_id=8, series=0)
    assert control != message_control_id(store_id="7Q2M9XKA", delivery_id=7, series=1)
    # the series follows a separator: row 1 series 36 is not row 37 series 0
    assert message_control_id(store_id="S", delivery_id=1, series=36) != message_control_id(
        store_id="S", delivery_id=37, series=0
    )
    assert (
        len(message_control_id(store_id="7Q2M9XKA", delivery_id=36**8 - 1, series=36**3 - 1)) == 20
    )
    key = NoteKey("7Q2M9XKA", 1, "en-IN", "v1")
    assert txa_12(key) == txa_12(NoteKey("7Q2M9XKA", 1, "en-IN", "v1"))
    others = [
        replace(key, store_id="7Q2M9XKB"),
        replace(key, item_id=2),
        replace(key, version="v2"),
    ]
    assert len({txa_12(k) for k in [key, *others]}) == 4
    assert len({note_urn(k) for k in [key, *others]}) == 4


def test_a_failed_delivery_is_logged_by_its_recordings_path_in_the_source(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    with store.unit_of_work() as uow:
        uow.runs.start_run(source="/ward/3", language=LANG)
    uri = "/ward/3/bed 1/round.wav"
    script = {"PAT-A": deque(["AR"])}
    with running_listener(MllpListener(by_patient=script)) as listener:
        make_done(store, {uri: "words"}, metadata={uri: {"patient_id": "PAT-A"}})
        target = f"mllp://127.0.0.1:{listener.port}"
        settings = target_settings(devserver_factory(), sqlite_url, target=target)
        with caplog.at_level(logging.WARNING, logger="medasr.deliver"):
            assert deliver(settings, store).failed == 1
    (line,) = [r.getMessage() for r in caplog.records if "failed" in r.getMessage()]
    assert line.startswith("delivery of bed 1/round.wav failed: hl7_rejected")
