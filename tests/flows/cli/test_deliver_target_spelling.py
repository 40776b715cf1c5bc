"""Another spelling of the same engine files nothing again: a target is its address.

Real parts: python-hl7's MLLP listener on 127.0.0.1 (files each MSH-10 once) and a real
`medasr deliver` command line against a store on disk.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from config.settings import StorageSettings
from flows.cli import app
from storage import open_store
from tasks.delivery.target_aliases import check_target_alias
from tasks.delivery.targets import parse_target
from tests.helpers.cli import table_rows
from tests.service.mllp_listener import running_listener
from tests.tasks.delivery.delivery_helpers import make_done

TEXTS = {"/d/a.wav": "alpha words", "/d/b.wav": "bravo words"}
META = {"/d/a.wav": {"patient_id": "PAT-A"}, "/d/b.wav": {"patient_id": "PAT-B"}}


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MEDASR_CONFIG", raising=False)
    url = f"sqlite:///{tmp_path / 'medasr.db'}"
    monkeypatch.setenv("MEDASR_DATABASE_URL", url)
    monkeypatch.setenv("MEDASR_DELIVERY__HL7_ACK_TIMEOUT_S", "5")
    store = open_store(StorageSettings(database_url=url))
    make_done(store, TEXTS, metadata=META)
    store.dispose()


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def test_a_new_spelling_of_an_engine_delivered_to_is_refused_or_the_same_target(env) -> None:
    with running_listener() as listener:
        port = listener.port
        first = invoke("deliver", "--to", f"mllp://127.0.0.1:{port}")
        assert first.exit_code == 0, first.output
        same = invoke("deliver", "--to", f"MLLP://127.1:{port}")  # the same name, spelt otherwise
        assert same.exit_code == 0, same.output
        assert table_rows(same.output)["documents planned"] == "0"
        alias = invoke("deliver", "--to", f"mllp://localhost:{port}")
        planned = invoke("deliver", "--to", f"mllp://localhost:{port}", "--dry-run")
        assert len(listener.received) == 2  # nothing filed again
        other = invoke("deliver", "--to", f"mllp://localhost:{port}", "--new-target")
    assert alias.exit_code == 2, alias.output
    said = [line for line in alias.output.splitlines() if line.strip()]
    assert len(said) == 1
    assert f"mllp://127.0.0.1:{port}" in said[0]
    assert "--new-target" in said[0]
    assert planned.exit_code == 2, planned.output
    assert other.exit_code == 0, other.output  # the operator said it is another receiver
    assert len(listener.received) == 4


@pytest.mark.parametrize(
    ("spelt", "canonical"),
    [
        ("MLLP://LocalHost:2575", "mllp://localhost:2575"),
        ("mllp://127.1:2575", "mllp://127.0.0.1:2575"),
        ("mllp://[0:0:0:0:0:0:0:1]:2575", "mllp://[::1]:2575"),
        ("fhir+http://127.0.0.1:80/fhir/", "fhir+http://127.0.0.1/fhir"),
        ("FHIR+HTTPS://EHR.example:443/R4", "fhir+https://ehr.example/R4"),
    ],
)
def test_a_targets_name_does_not_depend_on_its_spelling(spelt: str, canonical: str) -> None:
    assert parse_target(spelt, allow_insecure=True).name == canonical


def test_a_target_recorded_under_an_older_spelling_is_that_target() -> None:
    target = parse_target("mllp://127.0.0.1:2575")
    known = ["mllp://127.1:2575", "mllp://127.0.0.1:2576"]  # as an older medasr wrote it
    found = check_target_alias(target, known=known, new_target=False)
    assert found.name == "mllp://127.1:2575"
    other_port = parse_target("mllp://localhost:2577")
    assert check_target_alias(other_port, known=known, new_target=False) == other_port


@pytest.mark.parametrize(
    "spelt", ["fhir+http://127.0.0.1:0/fhir", "fhir+https://ehr.example:0/fhir"], ids=repr
)
def test_port_0_of_a_fhir_server_is_refused_not_read_as_the_default_port(
    env, monkeypatch: pytest.MonkeyPatch, spelt: str
) -> None:
    # Port 0 read as "no port" would file the notes at :80 / :443, another server.
    monkeypatch.setenv("MEDASR_FHIR_TOKEN", "fhir-token")
    monkeypatch.setenv("MEDASR_ALLOW_INSECURE_HTTP", "true")
    result = invoke("deliver", "--to", spelt)
    assert result.exit_code == 2, result.output
    said = [line for line in result.output.splitlines() if line.strip()]
    assert said == [
        f"medasr: configuration error: delivery target {spelt!r}: its port is not one "
        "from 1 to 65535"
    ]
