"""One rule for patient identifiers on every target: a control character, an identifier
of blanks only or one longer than any real one is `metadata_invalid` for that recording alone, on
the docs upload and FHIR as over MLLP; the dry run counts it as the real run refuses it.

Real parts: the devserver (docs upload, FHIR endpoint), python-hl7's MLLP listener,
`medasr deliver` from the command line.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows.cli import app
from tests.helpers.cli import deliverable_store, failure_kinds, table_rows
from tests.service.mllp_listener import MllpListener, running_listener

PATIENTS = {
    "/d/good.wav": "PAT-1",
    "/d/ctrl.wav": "PAT\r2",
    "/d/long.wav": "9" * 20_000,
    "/d/blank.wav": "   ",  # no patient, yet not missing: never filed as if it named one
}


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, devserver_factory):
    server = devserver_factory()
    deliverable_store(
        server,
        tmp_path=tmp_path,
        monkeypatch=monkeypatch,
        metadata={u: {"patient_id": p} for u, p in PATIENTS.items()},
    )
    return server


def _target(server, kind: str, port: int) -> str:
    return {"docs": "docs", "fhir": f"fhir+{server.url}/fhir", "mllp": f"mllp://127.0.0.1:{port}"}[
        kind
    ]


@pytest.mark.parametrize("kind", ["docs", "fhir", "mllp"])
def test_every_target_refuses_the_same_identifiers_and_the_dry_run_says_so(
    env, kind: str, tmp_path: Path
) -> None:
    with running_listener(MllpListener()) as listener:
        target = _target(env, kind, listener.port)
        planned = CliRunner().invoke(app, ["deliver", "--dry-run", "--to", target])
        real = CliRunner().invoke(app, ["deliver", "--to", target])
    rows = table_rows(planned.output)
    assert rows["documents to send"] == "1", planned.output
    assert real.exit_code == planned.exit_code == 1, real.output
    sent = table_rows(real.output)
    assert (sent["documents delivered"], sent["documents failed"]) == ("1", "3")
    assert rows["invalid metadata"] == "3"
    assert failure_kinds(tmp_path / "medasr.db") == ["metadata_invalid"] * 3
