"""SIGTERM, as `timeout`, systemd or a scheduler sends it, means what a first Ctrl-C means.

docs/troubleshooting.md, exit 130: "interrupted (Ctrl-C or SIGTERM)": the requests in
flight are finished and recorded, the other files are pending. The signal goes to the
medasr process only (not its group), as `kill PID` and `timeout` send it.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from tests.reliability.corpus import store_done_notes
from tests.reliability.evidence import chunks, items, query
from tests.reliability.test_terminal_interrupt import (
    SMALL_CHUNKS,
    assert_none_failed,
    recordings,
    wait_for,
)


def test_sigterm_once_the_flow_runs_finishes_the_requests_in_flight_and_exits_130(
    tmp_path: Path, tone_devserver, medasr_for, prefect_api: dict[str, str]
) -> None:
    server = tone_devserver(latency_ms=1500)
    source = tmp_path / "archive"
    recordings(source)
    database = f"sqlite:///{tmp_path / 'medasr.db'}"
    medasr = medasr_for(server, database, **SMALL_CHUNKS, **prefect_api)

    running = medasr.start("run", str(source), "-l", "en-IN", "--concurrency", "2")
    running.wait_for_output("Beginning flow run")  # Prefect's SIGTERM bridge is in place
    wait_for(lambda: server.state.capacity.peak_in_flight, running=running, what="a request")
    os.kill(running.process.pid, signal.SIGTERM)
    finished = running.wait(timeout_s=120)

    assert finished.returncode == 130, finished.describe()
    assert "Traceback" not in finished.stderr, finished.describe()
    assert "Crashed" not in finished.output, finished.describe()
    assert "interrupted" in finished.stderr, finished.describe()
    assert finished.summary(), finished.describe()  # the end-of-run table
    assert [r["status"] for r in items(database) if r["status"] == "processing"] == []
    assert_none_failed(database)
    recorded = {c["txn_id"] for c in chunks(database)}
    answered = [e.txn_id for e in server.ledger.entries() if e.status == 200]
    assert answered, finished.describe()
    assert [t for t in answered if t not in recorded] == [], finished.describe()


def test_sigterm_during_an_export_is_an_interruption_and_leaves_no_temporary_file(
    tmp_path: Path, tone_devserver, medasr_for
) -> None:
    database = f"sqlite:///{tmp_path / 'medasr.db'}"
    medasr = medasr_for(tone_devserver(), database)
    # ~20 MB of rows: the export takes a while after its temporary file appears.
    store_done_notes(
        medasr, database, {f"/archive/note-{i}.wav": "stable resting " * 250 for i in range(5000)}
    )
    out = tmp_path / "export" / "out.jsonl"
    out.parent.mkdir()

    running = medasr.start("export", "--format", "jsonl", "--out", str(out))
    wait_for(
        lambda: list(out.parent.glob(".medasr-export-*.tmp")),
        running=running,
        what="the export's temporary file",
    )
    os.kill(running.process.pid, signal.SIGTERM)
    finished = running.wait(timeout_s=60)

    assert finished.returncode == 130, finished.describe()
    assert "Traceback" not in finished.stderr, finished.describe()
    assert sorted(p.name for p in out.parent.iterdir()) == [], finished.describe()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "sigint"])
def test_a_signal_during_a_delivery_finishes_the_uploads_in_flight_and_exits_130(
    tmp_path: Path, tone_devserver, medasr_for, signum: signal.Signals
) -> None:
    server = tone_devserver(latency_ms=1500)
    database = f"sqlite:///{tmp_path / 'medasr.db'}"
    medasr = medasr_for(server, database)
    names = [f"/archive/note-{i}.wav" for i in range(12)]
    store_done_notes(medasr, database, {name: f"note {i} words" for i, name in enumerate(names)})

    running = medasr.start("deliver", "--allow-unlinked", MEDASR_CONCURRENCY="4")
    running.wait_for_output("delivered /archive/note-")  # the next batch goes on the wire
    time.sleep(0.5)
    os.kill(running.process.pid, signum)
    finished = running.wait(timeout_s=60)

    assert finished.returncode == 130, finished.describe()
    assert "Traceback" not in finished.stderr, finished.describe()
    statuses = [r["status"] for r in query(database, "SELECT status FROM deliveries")]
    # The uploads on the wire were answered and recorded; none left for a person.
    assert set(statuses) <= {"delivered", "pending"}, (statuses, finished.describe())
    assert statuses.count("delivered") >= 8, (statuses, finished.describe())

    again = medasr.run("deliver", "--allow-unlinked")
    assert again.returncode == 0, again.describe()
    statuses = [r["status"] for r in query(database, "SELECT status FROM deliveries")]
    assert statuses == ["delivered"] * len(names)


def test_a_second_signal_during_a_delivery_quits_at_once(
    tmp_path: Path, tone_devserver, medasr_for
) -> None:
    server = tone_devserver(latency_ms=20_000)  # the uploads on the wire are not answered
    database = f"sqlite:///{tmp_path / 'medasr.db'}"
    medasr = medasr_for(server, database)
    store_done_notes(
        medasr, database, {f"/archive/note-{i}.wav": f"note {i} words" for i in range(4)}
    )

    running = medasr.start("deliver", "--allow-unlinked", MEDASR_CONCURRENCY="2")
    wait_for(
        lambda: query(database, "SELECT id FROM deliveries WHERE sending_at IS NOT NULL"),
        running=running,
        what="an upload on the wire",
    )
    os.kill(running.process.pid, signal.SIGTERM)
    running.wait_for_output("interrupted: finishing the requests in flight")
    os.kill(running.process.pid, signal.SIGINT)
    finished = running.wait(timeout_s=10)  # not the 20 s the answers would take

    assert finished.returncode == 130, finished.describe()
    assert "Traceback" not in finished.stderr, finished.describe()
