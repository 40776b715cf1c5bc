"""`medasr deliver` and `medasr export --format fhir` from the command line, over real sockets."""

from __future__ import annotations

import base64
import json
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from config.settings import StorageSettings
from flows.cli import app
from storage import open_store
from tasks.delivery.fhir_documents import parse_bundle
from tests.helpers.cli import table_rows
from tests.tasks.delivery.delivery_helpers import docs_entries, make_done, sha_of_text

TEXTS = {"a.wav": "alpha words", "sub/b.wav": "bravo words", "c.wav": "charlie words"}
PATIENTS = {"a.wav": "P-a", "sub/b.wav": "P-b", "c.wav": "P-c"}


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    return tmp_path / "archive"


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, devserver_factory):
    """A store with three done transcripts and the variables pointing at a devserver."""
    server = devserver_factory()
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MEDASR_CONFIG", raising=False)
    url = f"sqlite:///{tmp_path / 'medasr.db'}"
    for name, value in {
        "MEDASR_DATABASE_URL": url,
        "MEDASR_BASE_URL": server.url,
        "MEDASR_TOKEN": server.token,
        "MEDASR_REQUEST_TIMEOUT_S": "10",
        "MEDASR_MAX_ATTEMPTS": "2",
        "MEDASR_DOCS_QUERY": "patient_id={patient_id}",
    }.items():
        monkeypatch.setenv(name, value)
    store = open_store(StorageSettings(database_url=url))
    archive = tmp_path / "archive"
    metadata = {str(archive / name): {"patient_id": p} for name, p in PATIENTS.items()}
    make_done(store, {str(archive / name): t for name, t in TEXTS.items()}, metadata=metadata)
    store.dispose()
    return server


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def test_deliver_sends_each_transcript_once_then_nothing(env) -> None:
    first = invoke("deliver")
    assert first.exit_code == 0, first.output
    assert "documents delivered" in first.output
    assert len(docs_entries(env)) == 3
    second = invoke("deliver")
    assert second.exit_code == 0, second.output
    assert len(docs_entries(env)) == 3  # nothing sent twice


def test_dry_run_counts_and_sends_nothing(
    env, archive: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = invoke("deliver", "--dry-run")
    assert result.exit_code == 0, result.output
    assert table_rows(result.output)["documents to send"] == "3"
    monkeypatch.setenv("MEDASR_DOCS_QUERY", "patient_id={mrn}")
    manifest = archive / "medasr.csv"
    manifest.parent.mkdir(parents=True, exist_ok=True)
    manifest.write_text("path,mrn\na.wav,P-1\n", encoding="utf-8")
    counted = invoke("deliver", "--dry-run", "--manifest", str(manifest))
    assert counted.exit_code == 1, counted.output  # missing metadata: as the real run (1)
    plan = table_rows(counted.output)
    assert (plan["documents to send"], plan["missing metadata"]) == ("1", "2")
    assert docs_entries(env) == []
    plain = invoke("deliver")  # the dry run stored nothing: a, b and c all lack mrn
    assert plain.exit_code == 1
    assert docs_entries(env) == []


def test_fhir_format_uploads_a_document_reference(env) -> None:
    result = invoke("deliver", "--format", "fhir", "--language", "en-IN")
    assert result.exit_code == 0, result.output
    entries = docs_entries(env)
    assert sorted(e.filename for e in entries) == ["a.json", "b.json", "c.json"]
    assert all(e.sha256 not in {sha_of_text(t) for t in TEXTS.values()} for e in entries)


def test_rejected_token_exits_3(env, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEDASR_TOKEN", "wrong-token")
    result = invoke("deliver")
    assert result.exit_code == 3, result.output
    assert "credentials rejected" in result.output
    assert "wrong-token" not in result.output


@pytest.mark.parametrize(
    "template", ["p={patient_id!r}", "p={patient_id:>5}", "p={patient_id", "{x}=1"]
)
def test_an_unusable_docs_query_exits_2_before_sending(
    env, monkeypatch: pytest.MonkeyPatch, template: str
) -> None:
    monkeypatch.setenv("MEDASR_DOCS_QUERY", template)
    result = invoke("deliver")
    assert result.exit_code == 2, result.output
    assert "MEDASR_DOCS_QUERY" in result.output
    assert docs_entries(env) == []


def test_manifest_fills_the_query_and_a_missing_field_exits_1(
    env, archive: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manifest = archive / "medasr.csv"
    manifest.parent.mkdir(parents=True, exist_ok=True)
    manifest.write_text("path,mrn\na.wav,P-1\nsub/b.wav,P-2\n", encoding="utf-8")
    monkeypatch.setenv("MEDASR_DOCS_QUERY", "patient_id={mrn}")
    result = invoke("deliver", "--manifest", str(manifest))
    assert result.exit_code == 1, result.output
    assert sorted(e.query for e in docs_entries(env)) == ["patient_id=P-1", "patient_id=P-2"]
    manifest.write_text("path,mrn\nc.wav,P-3\n", encoding="utf-8")
    fixed = invoke("deliver", "--manifest", str(manifest))  # c.wav's row is retried
    assert fixed.exit_code == 0, fixed.output
    assert sorted(e.query for e in docs_entries(env))[-1] == "patient_id=P-3"


def test_a_bad_manifest_exits_2_with_a_sentence(env, tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("file,patient_id\na.wav,P1\n", encoding="utf-8")
    result = invoke("deliver", "--manifest", str(bad))
    assert result.exit_code == 2, result.output
    assert "no 'path' column" in result.output
    assert "Traceback" not in result.output


def test_no_database_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MEDASR_DATABASE_URL", f"sqlite:///{tmp_path / 'none.db'}")
    monkeypatch.setenv("MEDASR_DOCS_QUERY", "patient_id={patient_id}")
    result = invoke("deliver")
    assert result.exit_code == 2
    assert "nothing to deliver" in result.output


def test_export_fhir_writes_a_valid_bundle(env, tmp_path: Path, archive: Path) -> None:
    out = tmp_path / "out" / "bundle.json"
    result = invoke("export", "--format", "fhir", "--out", str(out))
    assert result.exit_code == 0, result.output
    bundle = parse_bundle(out.read_bytes())  # validated by fhir.resources' R4B models
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    texts = sorted(e.resource.content[0].attachment.data.decode("utf-8") for e in bundle.entry)
    assert texts == sorted(TEXTS.values())
    raw = json.loads(out.read_text(encoding="utf-8"))
    first = raw["entry"][0]["resource"]["content"][0]["attachment"]
    assert base64.b64decode(first["data"]).decode() in TEXTS.values()
    assert {e.resource.docStatus for e in bundle.entry} == {"final"}
    again = tmp_path / "again.json"
    assert invoke("export", "--format", "fhir", "--out", str(again)).exit_code == 0
    assert json.loads(again.read_text())["entry"] == raw["entry"]  # stable identifiers


def test_run_refuses_a_bad_manifest_before_starting(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MEDASR_DATABASE_URL", f"sqlite:///{tmp_path / 'medasr.db'}")
    source = tmp_path / "archive"
    source.mkdir()
    (source / "medasr.csv").write_bytes(b"path,patient_id\na.wav,\xff\n")
    result = invoke("run", str(source), "--language", "en-IN")
    assert result.exit_code == 2, result.output
    assert "manifest error" in result.output
    assert "not UTF-8" in result.output
    assert not (tmp_path / "medasr.db").exists()  # stopped before anything else


def test_exports_show_each_recordings_manifest_columns(env, archive: Path, tmp_path: Path) -> None:
    manifest = archive / "medasr.csv"
    manifest.parent.mkdir(parents=True, exist_ok=True)
    manifest.write_text("path,patient_id,author\na.wav,P-1,Dr. Rao\n", encoding="utf-8")
    assert invoke("deliver", "--manifest", str(manifest), "--dry-run").exit_code == 0
    assert invoke("deliver", "--manifest", str(manifest)).exit_code == 0
    out = tmp_path / "x.jsonl"
    assert invoke("export", "--format", "jsonl", "--out", str(out)).exit_code == 0
    records = {Path(r["source"]).name: r for r in map(json.loads, out.read_text().splitlines())}
    assert records["a.wav"]["metadata"] == {"patient_id": "P-1", "author": "Dr. Rao"}
    assert records["c.wav"]["metadata"] == {"patient_id": "P-c"}
    fhir = tmp_path / "b.json"
    assert invoke("export", "--format", "fhir", "--out", str(fhir)).exit_code == 0
    (document,) = [
        e.resource
        for e in parse_bundle(fhir.read_bytes()).entry
        if e.resource.subject.identifier.value == "P-1"
    ]
    assert document.author[0].display == "Dr. Rao"


@pytest.mark.parametrize(
    "target", ["ftp://x", "mllp://127.0.0.1", "mllp://engine.example:2575", "fhir+http://ehr/fhir"]
)
def test_an_unusable_target_is_exit_2_and_sends_nothing(env, target: str) -> None:
    result = invoke("deliver", "--to", target)
    assert result.exit_code == 2, result.output
    assert "configuration error" in result.output
    assert docs_entries(env) == []


def test_the_target_comes_from_the_setting_and_the_dry_run_names_it(
    env, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEDASR_DELIVERY__TARGET", "mllp://127.0.0.1:2575")
    planned = invoke("deliver", "--dry-run")
    assert planned.exit_code == 0, planned.output
    rows = table_rows(planned.output)
    assert rows["target"] == "mllp://127.0.0.1:2575"
    assert (rows["documents to send"], rows["missing metadata"]) == ("3", "0")
    monkeypatch.setenv("MEDASR_FHIR_TOKEN", env.token)  # as the real run, the dry run needs it
    fhir = invoke("deliver", "--dry-run", "--to", f"fhir+{env.url}/fhir")
    assert table_rows(fhir.output)["target"] == f"fhir+{env.url}/fhir"
    assert table_rows(fhir.output)["documents to send"] == "3"
    assert docs_entries(env) == []


def test_deliver_to_a_fhir_server_files_each_transcript_once(
    env, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEDASR_FHIR_TOKEN", env.token)
    target = f"fhir+{env.url}/fhir"
    first = invoke("deliver", "--to", target)
    assert first.exit_code == 0, first.output
    assert invoke("deliver", "--to", target).exit_code == 0
    assert sorted(env.state.fhir.count_by_identifier().values()) == [1, 1, 1]
    assert docs_entries(env) == []
    assert invoke("deliver").exit_code == 0  # the same transcripts to the docs upload: 3 more
    assert len(docs_entries(env)) == 3
    status = invoke("status").output.splitlines()
    assert "delivery_target\tdelivery_status\trows" in status
    assert "docs\tdelivered\t3" in status
    assert f"{target}\tdelivered\t3" in status


def test_a_fhir_target_without_its_token_is_a_configuration_error(env) -> None:
    result = invoke("deliver", "--to", f"fhir+{env.url}/fhir")
    assert result.exit_code == 2, result.output  # before anything is sent
    assert "MEDASR_FHIR_TOKEN" in result.output
    assert env.state.fhir.resources == {}


def test_a_manifest_column_that_differs_only_in_case_is_named_in_one_line(
    env, archive: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEDASR_DOCS_QUERY", "patient_id={mrn}")
    manifest = archive / "medasr.csv"
    manifest.parent.mkdir(parents=True, exist_ok=True)
    manifest.write_text("path,MRN\na.wav,P-1\n", encoding="utf-8")
    result = invoke("deliver", "--dry-run", "--manifest", str(manifest))
    said = [line for line in result.output.splitlines() if "MRN" in line]
    assert len(said) == 1, result.output
    assert "mrn" in said[0]
    assert result.exit_code == 1  # three documents miss mrn, as the real run would say
