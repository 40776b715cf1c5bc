"""An engine that does not answer: resends are counted, and a silent engine stops the run.

Every resend of an unanswered MDM (same MSH-10) is a request and a retry in the summary.
Each unanswered document costs (resends + 1) x the ACK timeout, one after another; after
MEDASR_DELIVERY__HL7_STOP_AFTER_UNANSWERED documents in a row without any ACK the run
stops: those are in doubt, the rest stay pending, nothing more is sent. Real parts:
python-hl7's MLLP listener, scripted to stay silent.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from pydantic import SecretStr

from config.settings import DeliverySettings, PipelineSettings, Settings
from devserver import RunningDevServer
from storage.interface import UnitOfWorkFactory
from tasks.delivery.errors import ReceiverSilent
from tasks.delivery.stats import delivery_summary
from tests.service.mllp_listener import MllpListener, running_listener
from tests.tasks.delivery.delivery_helpers import deliver, delivery_settings, make_done

ACK_TIMEOUT_S = 0.5  # a silent engine costs this per send; an AA comes in milliseconds


def _settings(
    server: RunningDevServer, store_url: str, listener: MllpListener, **delivery: Any
) -> Settings:
    settings = delivery_settings(server, store_url)
    fields = {
        "target": f"mllp://127.0.0.1:{listener.port}",
        "hl7_ack_timeout_s": ACK_TIMEOUT_S,
        "fhir_token": SecretStr("unused"),
        **delivery,
    }
    return settings.model_copy(update={"delivery": DeliverySettings(**fields)})


def _statuses(store: UnitOfWorkFactory) -> dict[str, int]:
    with store.unit_of_work(read_only=True) as uow:
        return {c.status: c.rows for c in uow.deliveries.delivery_counts()}


def test_every_resend_is_a_request_and_a_retry(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    uri = "/d/a.wav"
    with running_listener(MllpListener(script=deque(["none", "drop", "AA"]))) as listener:
        make_done(store, {uri: "words"}, metadata={uri: {"patient_id": "MRN-1"}})
        stats = deliver(_settings(devserver_factory(), sqlite_url, listener), store)
    assert len(listener.received) == 3
    assert (stats.delivered, stats.requests, stats.retries) == (1, 3, 2)


def test_answered_failures_count_their_request(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    uri = "/d/a.wav"
    with running_listener(MllpListener(script=deque(["AE"]))) as listener:
        make_done(store, {uri: "words"}, metadata={uri: {"patient_id": "MRN-1"}})
        stats = deliver(_settings(devserver_factory(), sqlite_url, listener), store)
    assert (stats.failed, stats.requests, stats.retries) == (1, 1, 0)


def test_a_silent_engine_stops_the_run_after_documents_without_any_ack(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    texts = {f"/d/{n}.wav": f"note {n}" for n in range(6)}
    metadata = {uri: {"patient_id": f"MRN-{n}"} for n, uri in enumerate(texts)}
    with running_listener(MllpListener(silent=True)) as listener:
        make_done(store, texts, metadata=metadata)
        settings = _settings(
            devserver_factory(),
            sqlite_url,
            listener,
            hl7_resends=1,
            hl7_stop_after_unanswered=2,
        )
        stats = deliver(settings, store)
    summary = delivery_summary(stats)
    assert isinstance(stats.stopped, ReceiverSilent)
    assert "answered none of the last 2 documents" in str(stats.stopped)
    assert len(listener.received) == 2 * 2  # two documents, each sent twice, then nothing
    assert (stats.delivered, stats.in_doubt, stats.requests, stats.retries) == (0, 2, 4, 2)
    assert _statuses(store) == {"in_doubt": 2, "pending": 4}
    assert (summary["receiver_silent"], summary["exit_code"]) == (True, 1)


def test_a_late_ack_is_never_read_as_the_answer_to_the_next_document(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    texts = {"/d/a.wav": "first note", "/d/b.wav": "second note"}
    metadata = {"/d/a.wav": {"patient_id": "MRN-A"}, "/d/b.wav": {"patient_id": "MRN-B"}}
    answers = {"MRN-A": deque(["late"]), "MRN-B": deque(["AA"])}
    listener = MllpListener(by_patient=answers, late_s=ACK_TIMEOUT_S * 3)
    with running_listener(listener):
        items = make_done(store, texts, metadata=metadata)
        settings = _settings(devserver_factory(), sqlite_url, listener, hl7_resends=0)
        settings = settings.model_copy(update={"pipeline": PipelineSettings(concurrency=1)})
        stats = deliver(settings, store)
    with store.unit_of_work(read_only=True) as uow:
        rows = {u: uow.deliveries.deliveries_of_item(i.id)[-1] for u, i in items.items()}
    assert (stats.delivered, stats.in_doubt) == (1, 1)
    assert rows["/d/a.wav"].status == "in_doubt"  # its AA came after the timeout
    answered = rows["/d/b.wav"].response
    assert answered is not None
    assert answered["msa_2"] == answered["msh_10"]
    assert listener.connections == 2  # the late ACK's connection was closed, not reused
