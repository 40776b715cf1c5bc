"""`medasr deliver` to an MLLP engine that answers nothing: one line, exit 1, the rest pending."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from config.settings import StorageSettings
from flows.cli import app
from storage import open_store
from tests.flows.cli.test_commands import table_rows
from tests.service.mllp_listener import MllpListener, running_listener
from tests.tasks.delivery.delivery_helpers import make_done


def test_a_silent_engine_stops_deliver_with_one_line_and_exit_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MEDASR_CONFIG", raising=False)
    url = f"sqlite:///{tmp_path / 'medasr.db'}"
    for name, value in {
        "MEDASR_DATABASE_URL": url,
        "MEDASR_DELIVERY__HL7_ACK_TIMEOUT_S": "0.3",
        "MEDASR_DELIVERY__HL7_RESENDS": "0",
        "MEDASR_DELIVERY__HL7_STOP_AFTER_UNANSWERED": "1",
        "MEDASR_CONCURRENCY": "1",
    }.items():
        monkeypatch.setenv(name, value)
    store = open_store(StorageSettings(database_url=url))
    texts = {str(tmp_path / f"{n}.wav"): f"note {n}" for n in range(3)}
    make_done(store, texts, metadata={uri: {"patient_id": "MRN-1"} for uri in texts})
    store.dispose()
    with running_listener(MllpListener(silent=True)) as listener:
        result = CliRunner().invoke(app, ["deliver", "--to", f"mllp://127.0.0.1:{listener.port}"])
    assert result.exit_code == 1, result.output
    assert len(listener.received) == 1
    rows = table_rows(result.output)
    assert (rows["documents in doubt"], rows["receiver silent"]) == ("1", "yes")
    stopped = [line for line in result.output.splitlines() if "stopped:" in line]
    assert stopped == [
        "medasr: stopped: the engine answered none of the last 1 documents; undelivered "
        "documents stay pending"
    ]
