"""`deliver` to an HL7 engine over MLLP and to a FHIR server, each exactly once.

Real parts: python-hl7's MLLP listener on loopback (it parses, files each MSH-10 once
and answers as scripted) and the devserver's FHIR endpoint (conditional create).
"""

from __future__ import annotations

from collections import Counter, deque
from typing import Any

import pytest
from pydantic import SecretStr

from config.settings import DeliverySettings, Settings
from devserver import RunningDevServer
from storage.interface import UnitOfWorkFactory
from tests.service.mllp_listener import MllpListener, running_listener
from tests.tasks.delivery.delivery_helpers import deliver, delivery_settings, make_done

TEXTS = {
    "/d/a.wav": "Patient seen today.\nPlan: rest | fluids ^ review & recheck ~ 2 weeks.",
    "/d/b.wav": "Second note.",
    "/d/c.wav": "Third note,\nwith two lines.",
}
META = {
    "/d/a.wav": {"patient_id": "MRN-1", "encounter": "ENC-1", "author": "Dr. Rao"},
    "/d/b.wav": {"patient_id": "MRN-2", "doc_type": "DS"},
    "/d/c.wav": {"patient_id": "MRN-3"},
}


def _settings(
    server: RunningDevServer, store_url: str, *, target: str, **delivery: Any
) -> Settings:
    settings = delivery_settings(server, store_url)
    fields = {
        "target": target,
        "hl7_ack_timeout_s": 1.0,  # generous: a loaded machine must not turn an AA into a resend
        "fhir_token": SecretStr(server.token),
        **delivery,
    }
    return settings.model_copy(update={"delivery": DeliverySettings(**fields)})


def _mllp(listener: MllpListener) -> str:
    return f"mllp://127.0.0.1:{listener.port}"


def test_mllp_files_each_transcript_once_as_an_mdm_t02(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    with running_listener() as listener:
        make_done(store, TEXTS, metadata=META)
        settings = _settings(devserver_factory(), sqlite_url, target=_mllp(listener))
        first = deliver(settings, store)
        second = deliver(settings, store)
    assert (first.delivered, first.failed) == (3, 0)
    assert (second.planned, second.delivered, len(listener.received)) == (0, 0, 3)
    by_patient = {r.field("PID", 3): r for r in listener.received}
    assert set(by_patient) == {"MRN-1", "MRN-2", "MRN-3"}
    a = by_patient["MRN-1"]
    assert a.field("MSH", 9) == "MDM^T02^MDM_T02"
    assert a.obx_lines() == TEXTS["/d/a.wav"].split("\n")
    assert (a.field("PV1", 19), a.field("TXA", 2)) == ("ENC-1", "TN")
    assert by_patient["MRN-2"].field("TXA", 2) == "DS"
    assert listener.duplicates == 0
    assert listener.connections == 1  # one connection per deliverer


def test_a_new_version_goes_as_an_mdm_t10_naming_the_first(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    uri = "/d/a.wav"
    with running_listener() as listener:
        make_done(store, {uri: "first words"}, metadata={uri: META[uri]})
        settings = _settings(devserver_factory(), sqlite_url, target=_mllp(listener))
        deliver(settings, store)
        make_done(store, {uri: "second words"}, version="v2", metadata={uri: META[uri]})
        again = deliver(settings, store)
    assert again.delivered == 1
    first, second = listener.received
    assert second.field("MSH", 9) == "MDM^T10^MDM_T02"
    assert second.field("TXA", 13) == first.field("TXA", 12)
    assert second.field("TXA", 12) != first.field("TXA", 12)
    assert second.obx_lines() == ["second words"]


def test_text_in_any_script_arrives_as_it_was_written(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    uri = "/d/hi.wav"
    text = "मरीज़ को बुखार है।\nदवा: पैरासिटामोल | 500 mg"
    with running_listener() as listener:
        make_done(store, {uri: text}, language="hi", metadata={uri: {"patient_id": "MRN-हि"}})
        settings = _settings(devserver_factory(), sqlite_url, target=_mllp(listener))
        stats = deliver(settings, store)
    assert stats.delivered == 1
    (received,) = listener.received
    assert received.obx_lines() == text.split("\n")
    assert received.field("PID", 3) == "MRN-हि"


def test_ae_retries_later_ar_fails_and_an_unanswered_message_is_resent_with_its_msh_10(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    # a's ACK is lost; b gets AE; c gets AR (whatever order they go in).
    answers = {"MRN-1": deque(["none"]), "MRN-2": deque(["AE"]), "MRN-3": deque(["AR"])}
    with running_listener(MllpListener(by_patient=answers)) as listener:
        items = make_done(store, TEXTS, metadata=META)
        settings = _settings(devserver_factory(), sqlite_url, target=_mllp(listener))
        first = deliver(settings, store)
        rows = _rows(store, items)
        second = deliver(settings, store)
        after = _rows(store, items)
    assert (first.delivered, first.failed) == (1, 2)
    assert rows["/d/a.wav"].status == "delivered"
    assert (rows["/d/b.wav"].error_kind, rows["/d/b.wav"].retryable) == (
        "hl7_application_error",
        True,
    )
    assert (rows["/d/c.wav"].error_kind, rows["/d/c.wav"].retryable) == ("hl7_rejected", False)
    assert "scripted AR" in (rows["/d/c.wav"].error_message or "")
    assert (second.delivered, after["/d/b.wav"].status, after["/d/c.wav"].status) == (
        1,
        "delivered",
        "failed",
    )
    sent_for = Counter((r.field("TXA", 12), r.control_id) for r in listener.received)
    a_number = rows["/d/a.wav"].response["txa_12"]  # type: ignore[index]
    assert [n for (number, _), n in sent_for.items() if number == a_number] == [
        2
    ]  # one MSH-10, twice
    assert listener.documents_filed()[a_number] == 1
    assert rows["/d/a.wav"].response["msa_2"] == rows["/d/a.wav"].response["msh_10"]  # type: ignore[index]


@pytest.mark.parametrize(
    ("note", "encoding"),
    [
        # Engines quote the message they refuse: an ACK past 64 KiB (asyncio's default
        # line limit) is still an ACK, not "no answer" to resend every night.
        ("PID-3 not on file; " * 5_000, "utf-8"),  # ~95 kB
        # HL7 v2 without MSH-18 is commonly ISO-8859-1: an AR naming "Müller" so encoded
        # is an AR, not a garbled reply to resend (and leave in doubt) night after night.
        ("Müller: no such patient", "latin-1"),
    ],
    ids=["long", "iso-8859-1"],
)
def test_an_ar_long_or_in_iso_8859_1_is_a_rejection_not_a_missing_answer(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str, note: str, encoding: str
) -> None:
    uri = "/d/c.wav"
    listener = MllpListener(script=deque(["AR"]), note=note, ack_encoding=encoding)
    with running_listener(listener):
        items = make_done(store, {uri: TEXTS[uri]}, metadata={uri: META[uri]})
        stats = deliver(_settings(devserver_factory(), sqlite_url, target=_mllp(listener)), store)
    row = _rows(store, items)[uri]
    assert (row.status, row.error_kind, stats.in_doubt) == ("failed", "hl7_rejected", 0)
    assert len(listener.received) == 1  # not resent
    assert note[:24] in (row.error_message or "")


def test_a_message_still_unanswered_is_in_doubt_and_the_next_run_resends_the_same_msh_10(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    uri = "/d/a.wav"
    with running_listener(MllpListener(script=deque(["none", "drop"]))) as listener:
        items = make_done(store, {uri: "words"}, metadata={uri: META[uri]})
        settings = _settings(devserver_factory(), sqlite_url, target=_mllp(listener), hl7_resends=1)
        first = deliver(settings, store)
        row = _rows(store, items)[uri]
        second = deliver(settings, store)
    # In doubt, not failed; MLLP deduplicates, so the next run re-sends it by itself.
    assert (first.failed, first.in_doubt, row.status) == (0, 1, "in_doubt")
    assert second.delivered == 1
    assert len({r.control_id for r in listener.received}) == 1
    assert [r.answer for r in listener.received] == ["none", "drop", "AA"]
    assert list(listener.documents_filed().values()) == [1]


def test_fhir_creates_one_resource_per_version_and_a_replacement_points_at_it(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    server = devserver_factory(fault_script=("429", "reset"), retry_after_s=0)
    uri = "/d/a.wav"
    target = f"fhir+{server.url}/fhir"
    items = make_done(store, {uri: "first words"}, metadata={uri: META[uri]})
    settings = _settings(server, sqlite_url, target=target)
    first = deliver(settings, store)
    assert (first.delivered, deliver(settings, store).planned) == (1, 0)
    row = _rows(store, items)[uri]
    (resource,) = server.state.fhir.resources.values()
    assert row.response["remote_id"] == f"DocumentReference/{resource['id']}"  # type: ignore[index]
    make_done(store, {uri: "second words"}, version="v2", metadata={uri: META[uri]})
    assert deliver(settings, store).delivered == 1
    newer = [r for r in server.state.fhir.resources.values() if r["id"] != resource["id"]]
    (relates,) = newer[0]["relatesTo"]
    assert relates["code"] == "replaces"
    assert relates["target"]["reference"] == f"DocumentReference/{resource['id']}"
    assert set(server.state.fhir.count_by_identifier().values()) == {1}


def test_a_fhir_412_is_a_failure_with_a_clear_message(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    server = devserver_factory()
    uri = "/d/a.wav"
    items = make_done(store, {uri: "words"}, metadata={uri: META[uri]})
    settings = _settings(server, sqlite_url, target=f"fhir+{server.url}/fhir")
    from tasks.delivery.deliverer import plan_deliveries

    plan_deliveries(store, language=None, format_name="txt", max_attempts=3)
    _duplicate_on_server(server, store, items[uri])
    stats = deliver(settings, store)
    row = _rows(store, items)[uri]
    assert (stats.failed, row.status, row.error_kind) == (1, "failed", "request_rejected")
    assert "more than one DocumentReference" in (row.error_message or "")


def _duplicate_on_server(server: RunningDevServer, store: UnitOfWorkFactory, item: Any) -> None:
    from storage.deliveries import item_version
    from tasks.delivery.documents import note_of
    from tasks.delivery.fhir_documents import build_document_reference
    from tasks.delivery.identity import NoteKey

    with store.unit_of_work(read_only=True) as uow:
        key = NoteKey(uow.deliveries.store_identity(), item.id, item.language, item_version(item))
    note = note_of(item, key=key)
    for _ in range(2):
        resource = build_document_reference(note).model_dump(mode="json", exclude_none=True)
        server.state.fhir.create(resource, if_none_exist=None)


def _rows(store: UnitOfWorkFactory, items: dict[str, Any]) -> dict[str, Any]:
    with store.unit_of_work(read_only=True) as uow:
        return {uri: uow.deliveries.deliveries_of_item(item.id)[-1] for uri, item in items.items()}


def test_each_target_has_its_own_row_and_a_run_claims_only_its_own(
    store: UnitOfWorkFactory,
) -> None:
    from tasks.delivery.deliverer import plan_deliveries

    uri = "/d/a.wav"
    make_done(store, {uri: "words"}, metadata={uri: META[uri]})
    for target in ("docs", "mllp://127.0.0.1:2575", "docs"):
        plan_deliveries(store, language=None, format_name="txt", max_attempts=3, target=target)
    with store.unit_of_work() as uow:
        claimed = uow.delivery_claims.claim_deliveries(
            owner="o", language=None, limit=10, lease_s=60, target="mllp://127.0.0.1:2575"
        )
        by_target = {c.target: c.rows for c in uow.deliveries.delivery_counts_by_target()}
    assert [row.target for row in claimed] == ["mllp://127.0.0.1:2575"]
    assert by_target == {"docs": 1, "mllp://127.0.0.1:2575": 1}
