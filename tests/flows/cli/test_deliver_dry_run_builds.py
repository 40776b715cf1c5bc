"""The dry run builds each document exactly as the real run would and counts a document it
cannot build as the real run refuses it: its plan is what the real run sends.

A manifest `date` that is not a date passes the identifier rule but not the FHIR build
(the DocumentReference's attachment.creation); a patient_id of blanks is refused by the
identifier rule on every target (tasks/delivery/identifiers.py). Real parts: the
devserver (docs upload, FHIR endpoint), python-hl7's MLLP listener, `medasr deliver`
from the command line.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows.cli import app
from tests.helpers.cli import deliverable_store, failure_kinds, table_rows
from tests.service.mllp_listener import MllpListener, running_listener

METADATA = {
    "/d/good.wav": {"patient_id": "PAT-1"},
    "/d/blank.wav": {"patient_id": "   "},  # no patient, yet not missing
    "/d/date.wav": {"patient_id": "PAT-3", "date": "31/12/2025"},  # not an ISO date
}


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, devserver_factory):
    server = devserver_factory()
    deliverable_store(server, tmp_path=tmp_path, monkeypatch=monkeypatch, metadata=METADATA)
    return server


def _args(server, kind: str, port: int) -> list[str]:
    return {
        "docs": ["--to", "docs", "--format", "fhir"],
        "fhir": ["--to", f"fhir+{server.url}/fhir"],
        "mllp": ["--to", f"mllp://127.0.0.1:{port}"],
    }[kind]


@pytest.mark.parametrize("kind", ["docs", "fhir", "mllp"])
def test_the_dry_runs_plan_is_what_the_real_run_sends_and_refuses(
    env, kind: str, tmp_path: Path
) -> None:
    with running_listener(MllpListener()) as listener:
        args = _args(env, kind, listener.port)
        planned = CliRunner().invoke(app, ["deliver", "--dry-run", *args])
        real = CliRunner().invoke(app, ["deliver", *args])
        received = len(listener.filed) if kind == "mllp" else None
    plan, sent = table_rows(planned.output), table_rows(real.output)
    refused = int(sent["documents failed"])
    assert refused >= 1, real.output  # the corpus holds a document this target cannot build
    if kind != "mllp":  # an MDM takes any date text; its blank PID-3 is the identifier rule's
        assert "document_invalid" in failure_kinds(tmp_path / "medasr.db")
    assert plan["documents to send"] == sent["documents delivered"], planned.output
    planned_refusals = int(plan["invalid documents"]) + int(plan["invalid metadata"])
    assert planned_refusals == refused, planned.output
    assert planned.exit_code == real.exit_code == 1, planned.output
    if received is not None:
        assert received == int(sent["documents delivered"])
