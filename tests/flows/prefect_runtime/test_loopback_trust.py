"""Prefect's clients of the temporary server load one certificate, not the CA bundle.

The server speaks plain HTTP on loopback, yet Prefect builds an SSL context for each
client (8 per run, ~30 ms of CPU each with the whole bundle, on the event loop that sends
the requests). The one certificate they load has no private key anywhere: it vouches for
no server, so trusting it trusts nothing.
"""

from __future__ import annotations

import datetime
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from flows.prefect_runtime.prefect_api import LOOPBACK_TRUST, PrefectApi, _TemporaryServer


@pytest.fixture
def loaded(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The trust files SSL contexts load from now on (None: the system's defaults)."""
    files: list[object] = []
    load = ssl.SSLContext.load_verify_locations
    defaults = ssl.SSLContext.set_default_verify_paths

    def loading(self: ssl.SSLContext, cafile: object = None, *args: object, **kw: object) -> None:
        files.append(cafile)
        load(self, cafile, *args, **kw)  # type: ignore[arg-type]

    def defaulting(self: ssl.SSLContext) -> None:
        files.append(None)
        defaults(self)

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", loading)
    monkeypatch.setattr(ssl.SSLContext, "set_default_verify_paths", defaulting)
    return files


def test_prefect_clients_of_the_temporary_server_load_only_the_keyless_anchor(
    loaded: list[object],
) -> None:
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    api = PrefectApi(server=_TemporaryServer(start_timeout_s=1))
    with api.in_use():
        assert PREFECT_API_URL.value().startswith("http://127.0.0.1:")
        get_client(sync_client=True)
        get_client()
    assert loaded == [str(LOOPBACK_TRUST)] * 2
    loaded.clear()
    # Outside: Prefect's own choice of trust again. A long-running server's address, or
    # Prefect would start a temporary server of its own in this process, stopped only at
    # its exit (its last log line then goes to a stream pytest has closed).
    with temporary_settings(updates={PREFECT_API_URL: "http://127.0.0.1:9/api"}):
        get_client()
    assert loaded
    assert str(LOOPBACK_TRUST) not in loaded


def test_the_anchor_holds_one_certificate_and_no_key() -> None:
    text = LOOPBACK_TRUST.read_text()
    assert "PRIVATE KEY" not in text
    context = ssl.create_default_context(cafile=LOOPBACK_TRUST)
    assert context.cert_store_stats()["x509_ca"] == 1


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[int]:
    """A TLS server on loopback with a certificate of its own; yields its port."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    (tmp_path / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "key.pem").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ))  # fmt: skip
    server_side = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_side.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        connection, _ = listener.accept()
        try:
            with server_side.wrap_socket(connection, server_side=True):
                pass
        except (ssl.SSLError, OSError):
            pass  # the client refused us: what the test wants

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    listener.close()
    thread.join(timeout=5)


def test_the_anchor_vouches_for_no_server(tls_server: int) -> None:
    client = ssl.create_default_context(cafile=LOOPBACK_TRUST)
    with (
        socket.create_connection(("127.0.0.1", tls_server), timeout=5) as raw,
        pytest.raises(ssl.SSLCertVerificationError),
    ):
        client.wrap_socket(raw, server_hostname="127.0.0.1")
