"""Kill `medasr deliver` mid-batch on each target, deliver again: nothing filed twice.

MLLP: the engine filed a message whose ACK never came; the deliverer dies waiting. The
next run takes the dead deliverer's rows back and resends with the ORIGINAL MSH-10,
which the engine recognises. FHIR: the server filed resources whose answers were still
on their way; the next run's conditional creates find them (one resource per identifier).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

from pydantic import SecretStr

from config.settings import DeliverySettings
from devserver import RunningDevServer
from storage.interface import UnitOfWorkFactory
from tests.service.mllp_listener import MllpListener, running_listener
from tests.tasks.delivery.delivery_helpers import deliver, delivery_settings, make_done

COUNT = 8
TEXTS = {f"/d/r{i:02d}.wav": f"note number {i}" for i in range(COUNT)}
META = {uri: {"patient_id": f"MRN-{i}"} for i, uri in enumerate(TEXTS)}


def _start_deliverer(
    tmp_path: Path, sqlite_url: str, target: str, token: str
) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEDASR_")}
    env |= {
        "MEDASR_DATABASE_URL": sqlite_url,
        "MEDASR_DATA_DIR": str(tmp_path / "data"),
        "MEDASR_CONCURRENCY": "4",
        "MEDASR_DELIVERY__HL7_ACK_TIMEOUT_S": "120",
        "MEDASR_FHIR_TOKEN": token,
        "MEDASR_TOKEN": token,
    }
    medasr = Path(sys.executable).with_name("medasr")
    return subprocess.Popen(
        [str(medasr), "deliver", "--to", target],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _kill_when(process: subprocess.Popen[bytes], ready: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 60
    while not ready():
        assert process.poll() is None, "the deliverer ended before it could be killed"
        assert time.monotonic() < deadline, "the deliverer never got mid-batch"
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()  # reaped: its leases now belong to a dead process


def test_mllp_killed_mid_batch_then_resent_with_the_original_msh_10(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str, tmp_path: Path
) -> None:
    server: RunningDevServer = devserver_factory()
    script = deque(["AA", "AA", "AA", "none"])  # the 4th is filed, its ACK never comes
    with running_listener(MllpListener(script=script)) as listener:
        make_done(store, TEXTS, metadata=META)
        target = f"mllp://127.0.0.1:{listener.port}"
        process = _start_deliverer(tmp_path, sqlite_url, target, server.token)
        _kill_when(process, lambda: len(listener.received) >= 4)
        settings = delivery_settings(server, sqlite_url)
        delivery = DeliverySettings(target=target, hl7_ack_timeout_s=2)
        stats = deliver(settings.model_copy(update={"delivery": delivery}), store)
    filed = listener.documents_filed()
    assert len(filed) == COUNT
    assert set(filed.values()) == {1}  # no document filed twice
    ids_per_document: dict[str, set[str]] = {}
    for received in listener.received:
        ids_per_document.setdefault(received.field("TXA", 12), set()).add(received.control_id)
    assert all(len(ids) == 1 for ids in ids_per_document.values())  # every resend: its MSH-10
    # The one whose ACK was lost, and any the deliverer died before recording: recognised.
    assert listener.duplicates >= 1
    assert stats.failed == 0
    with store.unit_of_work(read_only=True) as uow:
        counts = {c.status: c.rows for c in uow.deliveries.delivery_counts()}
    assert counts == {"delivered": COUNT}


def test_fhir_killed_mid_batch_leaves_one_resource_per_identifier(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str, tmp_path: Path
) -> None:
    # Every create is filed at once and answered slowly: a kill loses answers, not files.
    server: RunningDevServer = devserver_factory(rate_slow=1.0, slow_s=1.0)
    make_done(store, TEXTS, metadata=META)
    target = f"fhir+{server.url}/fhir"
    process = _start_deliverer(tmp_path, sqlite_url, target, server.token)
    _kill_when(process, lambda: len(server.state.fhir.resources) >= 2)
    filed_before = len(server.state.fhir.resources)
    settings = delivery_settings(server, sqlite_url)
    delivery = DeliverySettings(target=target, fhir_token=SecretStr(server.token))
    stats = deliver(settings.model_copy(update={"delivery": delivery}), store)
    counts = server.state.fhir.count_by_identifier()
    assert len(counts) == COUNT
    assert set(counts.values()) == {1}
    creates = [line for line in server.ledger.entries() if "fhir" in line.path]
    # Rows the killed deliverer had filed but not recorded were sent again: found, not doubled.
    assert len(creates) > COUNT
    assert filed_before >= 2
    assert stats.failed == 0
