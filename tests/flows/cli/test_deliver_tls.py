"""`medasr deliver` to a receiver whose TLS certificate does not verify: a line says why.

Real parts: the devserver serving HTTPS with a certificate of a private CA the client
does not trust (a self-signed engine), and a real `medasr deliver` against a store on disk.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from flows.cli import app
from storage.interface import UnitOfWorkFactory
from tasks.delivery.deliverer import deliver_and_summarize
from tests.helpers.cli import deliverable_store
from tests.service.tls_certs import make_tls_files
from tests.tasks.delivery.delivery_helpers import delivery_settings, make_done


@pytest.mark.parametrize("target", ["fhir", "docs"])
def test_a_certificate_that_does_not_verify_stops_deliver_with_a_line_naming_the_bundle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, devserver_factory: Any, target: str
) -> None:
    tls = make_tls_files(tmp_path)
    server = devserver_factory(tls_cert_path=tls.server_cert, tls_key_path=tls.server_key)
    metadata = {"/d/a.wav": {"patient_id": "MRN-1"}}
    deliverable_store(server, tmp_path=tmp_path, monkeypatch=monkeypatch, metadata=metadata)
    to = f"fhir+{server.url}/fhir" if target == "fhir" else "docs"
    result = CliRunner().invoke(app, ["deliver", "--to", to, "--allow-unlinked"])
    assert result.exit_code == 2, result.output
    stopped = [line for line in result.output.splitlines() if line.startswith("medasr: stopped")]
    assert len(stopped) == 1, result.output
    assert "TLS certificate could not be verified" in stopped[0]
    assert "MEDASR_CA_BUNDLE" in stopped[0]


def test_the_nightly_delivery_step_logs_why_a_certificate_stopped_it(
    devserver_factory: Any,
    store: UnitOfWorkFactory,
    sqlite_url: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    tls = make_tls_files(tmp_path)
    server = devserver_factory(tls_cert_path=tls.server_cert, tls_key_path=tls.server_key)
    make_done(store, {"/d/a.wav": "words"}, metadata={"/d/a.wav": {"patient_id": "MRN-1"}})
    settings = delivery_settings(server, sqlite_url, docs_query="patient_id={patient_id}")
    summary = asyncio.run(
        deliver_and_summarize(settings=settings, store=store, language=None, format_name="txt")
    )
    assert summary["stopped_by_configuration"] is True
    said = [r.getMessage() for r in caplog.records if r.name == "medasr.deliver"]
    assert any("MEDASR_CA_BUNDLE" in line for line in said), said
