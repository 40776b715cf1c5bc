"""The client over https on loopback: a private CA verifies with MEDASR_CA_BUNDLE, else terminal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import certifi
import pytest

from config.errors import ConfigError
from devserver import RunningDevServer
from service.client import RetryEvent
from service.errors import TlsNotVerified
from tests.servers import make_tone_wav_bytes
from tests.service.client_call import transcribe
from tests.service.tls_certs import TlsFiles, make_tls_files

TEXT = "tls on loopback"
TONE_WAV = make_tone_wav_bytes(TEXT)


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return make_tls_files(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def https_server(devserver_factory: Any, tls_files: TlsFiles) -> RunningDevServer:
    server: RunningDevServer = devserver_factory(
        tls_cert_path=tls_files.server_cert, tls_key_path=tls_files.server_key
    )
    assert server.url.startswith("https://127.0.0.1:")
    return server


def test_private_ca_in_the_bundle_verifies(
    https_server: RunningDevServer, tls_files: TlsFiles
) -> None:
    events: list[RetryEvent] = []
    result = transcribe(
        https_server, TONE_WAV, events=events, max_attempts=5, ca_bundle=tls_files.ca_cert
    )
    assert (result.text, result.attempts, events) == (TEXT, 1, [])
    assert https_server.ledger.statuses() == [200]


@pytest.mark.parametrize(
    "ca_bundle", [None, Path(certifi.where())], ids=["system-cas", "other-bundle"]
)
def test_unverified_certificate_is_terminal_and_not_retried(
    https_server: RunningDevServer, ca_bundle: Path | None
) -> None:
    events: list[RetryEvent] = []
    with pytest.raises(TlsNotVerified) as caught:
        transcribe(https_server, TONE_WAV, events=events, max_attempts=5, ca_bundle=ca_bundle)
    error = caught.value
    assert isinstance(error, ConfigError)
    assert not error.transient
    assert "certificate could not be verified" in str(error)
    assert "MEDASR_CA_BUNDLE" in str(error)
    assert "\n" not in str(error)
    assert events == []  # one handshake, no retry
    assert len(https_server.ledger) == 0  # the handshake failed: no request reached the app


def test_certificate_for_another_host_is_terminal(
    devserver_factory: Any, tls_files: TlsFiles
) -> None:
    # The certificate names 127.0.0.1, ::1 and localhost; this loopback address is not one.
    server = devserver_factory(
        host="127.0.0.2", tls_cert_path=tls_files.server_cert, tls_key_path=tls_files.server_key
    )
    events: list[RetryEvent] = []
    with pytest.raises(TlsNotVerified, match="MEDASR_BASE_URL") as caught:
        transcribe(server, TONE_WAV, events=events, max_attempts=5, ca_bundle=tls_files.ca_cert)
    assert "127.0.0.2" in str(caught.value)  # the verifier's reason names the host
    assert events == []
