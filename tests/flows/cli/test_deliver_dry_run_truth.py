"""The dry run tells the truth: what it says the real run will send to *that* target is
what the real run sends, and it exits as the real run would.

Real parts: the devserver (docs upload, FHIR endpoint, its `reset` fault: filed, answer
lost), python-hl7's MLLP listener, `medasr deliver` from the command line.
"""

from __future__ import annotations

from collections import deque
from pathlib import Path

import pytest
from typer.testing import CliRunner

from config.settings import StorageSettings
from flows.cli import app
from storage import open_store
from tests.helpers.cli import table_rows
from tests.service.mllp_listener import MllpListener, running_listener
from tests.tasks.delivery.delivery_helpers import docs_entries, make_done

PATIENTS = {f"/d/{n}.wav": f"PAT-{n}" for n in "abc"}


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, devserver_factory):
    server = devserver_factory(fault_script=("ok", "ok", "reset"), retry_after_s=0)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MEDASR_CONFIG", raising=False)
    url = f"sqlite:///{tmp_path / 'medasr.db'}"
    for name, value in {
        "MEDASR_DATABASE_URL": url,
        "MEDASR_BASE_URL": server.url,
        "MEDASR_TOKEN": server.token,
        "MEDASR_MAX_ATTEMPTS": "1",
        "MEDASR_DOCS_QUERY": "patient_id={patient_id}",
        "MEDASR_DELIVERY__HL7_ACK_TIMEOUT_S": "5",
    }.items():
        monkeypatch.setenv(name, value)
    store = open_store(StorageSettings(database_url=url))
    texts = {uri: f"note of {patient}" for uri, patient in PATIENTS.items()}
    make_done(store, texts, metadata={u: {"patient_id": p} for u, p in PATIENTS.items()})
    store.dispose()
    return server


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def _planned(*args: str) -> tuple[int, dict[str, str]]:
    result = invoke("deliver", "--dry-run", *args)
    return result.exit_code, table_rows(result.output)


def test_the_dry_run_counts_for_its_target_and_leaves_out_what_will_not_go(env) -> None:
    first = invoke("deliver")  # docs: two filed, the third's answer lost (in doubt)
    assert first.exit_code == 1, first.output
    code, docs = _planned()
    again = invoke("deliver")
    assert (code, docs["documents to send"]) == (again.exit_code, "0")  # in doubt waits
    assert len(docs_entries(env)) == 3
    script = {"PAT-a": deque(["AR"])}
    with running_listener(MllpListener(by_patient=script)) as listener:
        target = f"mllp://127.0.0.1:{listener.port}"
        code, mllp = _planned("--to", target)
        real = invoke("deliver", "--to", target)
        sent = len(listener.received)
        assert (mllp["documents to send"], sent) == ("3", 3)  # another target: all three
        code_after, after = _planned("--to", target)
        still = invoke("deliver", "--to", target)
        assert (after["documents to send"], len(listener.received)) == ("0", sent)  # AR stays
    assert (code, code_after) == (real.exit_code, still.exit_code)


def test_the_dry_run_exits_as_the_real_run_on_the_fhir_token(
    env, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = f"fhir+{env.url}/fhir"
    monkeypatch.delenv("MEDASR_FHIR_TOKEN", raising=False)
    # A missing token is a configuration error before anything starts, in both runs.
    assert (_planned("--to", target)[0], invoke("deliver", "--to", target).exit_code) == (2, 2)
    monkeypatch.setenv("MEDASR_FHIR_TOKEN", env.token[:4] + "\n" + env.token[4:])
    planned = invoke("deliver", "--dry-run", "--to", target)
    real = invoke("deliver", "--to", target)
    assert (planned.exit_code, real.exit_code) == (2, 2)
    assert "MEDASR_FHIR_TOKEN" in planned.output
    assert "MEDASR_FHIR_TOKEN" in real.output
    assert env.state.fhir.resources == {}
