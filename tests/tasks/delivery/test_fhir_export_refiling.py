"""`medasr export --format fhir` names a note's current version as delivery files it: a
version that is the note again after another replaced it (a correction undone) is
exported under the identifiers of its new filing (the ones the record holds, or will
be given by the next delivery), replacing the version the record holds.

Real parts: the devserver's FHIR endpoint, the delivery pipeline, the export.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from devserver import RunningDevServer
from storage.interface import UnitOfWorkFactory
from tasks.delivery.fhir_documents import DEFAULT_NOTE_CODE
from tasks.delivery.fhir_export import write_fhir_bundle
from tests.tasks.delivery.delivery_helpers import deliver, make_done, target_settings

URI = "/d/a.wav"
META = {URI: {"patient_id": "PAT-A"}}


def _exported(store: UnitOfWorkFactory, path: Path) -> dict[str, Any]:
    assert write_fhir_bundle(store, path, status=None, note_code=DEFAULT_NOTE_CODE) == (1, 0)
    (entry,) = json.loads(path.read_bytes())["entry"]
    return dict(entry["resource"])


def _identity(resource: dict[str, Any]) -> tuple[str, str | None]:
    replaced = resource.get("relatesTo", [{}])[0].get("target", {}).get("identifier", {})
    return resource["masterIdentifier"]["value"], replaced.get("value")


def test_the_export_names_a_refiled_version_as_delivery_files_it(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str, tmp_path: Path
) -> None:
    server: RunningDevServer = devserver_factory()
    settings = target_settings(server, sqlite_url, target=f"fhir+{server.url}/fhir")
    make_done(store, {URI: "machine words"}, metadata=META)
    assert deliver(settings, store).delivered == 1
    (first,) = server.state.fhir.resources.values()
    make_done(store, {URI: "corrected words"}, version="v2", metadata=META)
    assert _identity(_exported(store, tmp_path / "b.json"))[1] == first["masterIdentifier"]["value"]
    assert deliver(settings, store).delivered == 1
    (corrected,) = [r for r in server.state.fhir.resources.values() if r.get("relatesTo")]
    assert _identity(_exported(store, tmp_path / "c.json")) == _identity(corrected)
    make_done(store, {URI: "machine words"}, version="v1", metadata=META)  # undone
    before = _identity(_exported(store, tmp_path / "before.json"))  # not filed yet
    assert deliver(settings, store).delivered == 1
    after = _identity(_exported(store, tmp_path / "after.json"))
    (newest,) = [
        r
        for r in server.state.fhir.resources.values()
        if r.get("relatesTo") and _identity(r)[1] == corrected["masterIdentifier"]["value"]
    ]
    assert before == after == _identity(newest)
    assert after[0] != first["masterIdentifier"]["value"]  # not the filing it replaced
