"""No note without a patient link: the docs upload needs a query naming a manifest column,
FHIR a subject; `--allow-unlinked` files unlinked notes on purpose and the dry run says so.

Real parts: the devserver's docs upload and FHIR endpoint over loopback sockets.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from config.settings import StorageSettings
from flows.cli import app
from storage import open_store
from tests.helpers.cli import table_rows
from tests.tasks.delivery.delivery_helpers import docs_entries, make_done

TEXTS = {"a.wav": "alpha words", "b.wav": "bravo words"}


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, devserver_factory):
    """Two done transcripts, only a.wav with a patient_id; no MEDASR_DOCS_QUERY."""
    server = devserver_factory()
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MEDASR_CONFIG", raising=False)
    monkeypatch.delenv("MEDASR_DOCS_QUERY", raising=False)
    url = f"sqlite:///{tmp_path / 'medasr.db'}"
    for name, value in {
        "MEDASR_DATABASE_URL": url,
        "MEDASR_BASE_URL": server.url,
        "MEDASR_TOKEN": server.token,
        "MEDASR_FHIR_TOKEN": server.token,
        "MEDASR_MAX_ATTEMPTS": "2",
    }.items():
        monkeypatch.setenv(name, value)
    store = open_store(StorageSettings(database_url=url))
    archive = tmp_path / "archive"
    metadata = {str(archive / "a.wav"): {"patient_id": "PAT-A"}}
    make_done(store, {str(archive / n): t for n, t in TEXTS.items()}, metadata=metadata)
    store.dispose()
    return server


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def test_the_docs_upload_without_a_query_naming_a_column_is_refused_before_sending(env) -> None:
    for args in (("deliver",), ("deliver", "--dry-run")):
        result = invoke(*args)
        assert result.exit_code == 2, result.output
        said = [line for line in result.output.splitlines() if line.strip()]
        assert len(said) == 1, result.output
        assert "MEDASR_DOCS_QUERY" in said[0]
        assert "--allow-unlinked" in said[0]
    assert docs_entries(env) == []


def test_allow_unlinked_files_them_on_purpose_and_the_dry_run_counts_them(env) -> None:
    planned = invoke("deliver", "--dry-run", "--allow-unlinked")
    assert planned.exit_code == 0, planned.output
    rows = table_rows(planned.output)
    assert (rows["documents to send"], rows["unlinked"]) == ("2", "2")
    sent = invoke("deliver", "--allow-unlinked")
    assert sent.exit_code == 0, sent.output
    assert len(docs_entries(env)) == 2


def test_fhir_without_a_patient_fails_that_recording_alone(env) -> None:
    target = f"fhir+{env.url}/fhir"
    planned = invoke("deliver", "--dry-run", "--to", target)
    rows = table_rows(planned.output)
    assert (rows["documents to send"], rows["missing metadata"]) == ("1", "1")
    result = invoke("deliver", "--to", target)
    assert result.exit_code == 1, result.output
    subjects = [r["subject"]["identifier"]["value"] for r in env.state.fhir.resources.values()]
    assert subjects == ["PAT-A"]
    status = invoke("status").output.splitlines()
    assert f"{target}\tfailed\t1" in status
    unlinked = invoke("deliver", "--to", target, "--dry-run", "--allow-unlinked")
    assert table_rows(unlinked.output)["unlinked"] == "1"
