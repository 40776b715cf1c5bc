"""SIGTERM, as `timeout`, systemd or a scheduler sends it, means what a first Ctrl-C means.

docs/troubleshooting.md, exit 130: "interrupted (Ctrl-C or SIGTERM)": the requests in
flight are finished and recorded, the other files are pending. The signal goes to the
medasr process only (not its group), as `kill PID` and `timeout` send it.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

from tests.reliability.evidence import chunks, items
from tests.reliability.test_terminal_interrupt import (
    SMALL_CHUNKS,
    assert_none_failed,
    recordings,
    wait_for,
)
from tests.tasks.delivery.delivery_helpers import make_done


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
    assert medasr.run("db", "upgrade").returncode == 0
    from config.settings import StorageSettings
    from storage import open_store

    store = open_store(StorageSettings(database_url=database))
    # ~20 MB of rows: the export takes a while after its temporary file appears.
    make_done(store, {f"/archive/note-{i}.wav": "stable resting " * 250 for i in range(5000)})
    store.dispose()
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
