"""`medasr web`: TLS off loopback, Secure cookies under TLS, and its settings."""

from __future__ import annotations

import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn
from typer.testing import CliRunner

from config.settings import Settings
from config.workstation import WebSettings
from flows.cli import app as medasr
from storage.review_interface import ReviewStore
from tasks.audio import find_ffmpeg
from tests.helpers.audio import path_without_ffmpeg
from tests.service.tls_certs import TlsFiles, make_tls_files
from tests.web.workstation import sign_in
from web.app import build_app
from web.command import check_transport, is_loopback, server_config


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.5", "::", "example.org"])
def test_plain_http_off_loopback_exits_2_with_one_line(runner: CliRunner, host: str) -> None:
    result = runner.invoke(medasr, ["web", "--host", host, "--port", "1"])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "MEDASR_WEB__TLS_CERT" in lines[0]
    assert "MEDASR_ALLOW_INSECURE_HTTP=true" in lines[0]


def test_half_a_tls_pair_exits_2(runner: CliRunner, tmp_path: Path) -> None:
    files = make_tls_files(tmp_path)
    result = runner.invoke(medasr, ["web"], env={"MEDASR_WEB__TLS_CERT": str(files.server_cert)})
    assert result.exit_code == 2
    assert "go together" in result.stderr


@pytest.mark.parametrize(("host", "loopback"), [("127.0.0.1", True), ("127.9.9.9", True),
    ("::1", True), ("localhost", True), ("0.0.0.0", False), ("10.0.0.1", False)])  # fmt: skip
def test_loopback_hosts(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_plain_http_off_loopback_when_allowed_on_purpose(tmp_path: Path) -> None:
    settings = Settings(
        service={"allow_insecure_http": True},
        storage={"database_url": f"sqlite:///{tmp_path}/m.db"},
    )
    assert check_transport(settings, host="0.0.0.0") is False


@pytest.fixture
def tls_files(tmp_path: Path) -> TlsFiles:
    return make_tls_files(tmp_path)


@pytest.fixture
def tls_served(review_store: ReviewStore, accounts, tls_files: TlsFiles) -> Iterator[str]:
    application = build_app(review_store, web=WebSettings(), tls=True)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    config = server_config(
        application, host="127.0.0.1", port=0,
        tls_files=(tls_files.server_cert, tls_files.server_key), log_config=None, lifespan="off",
    )  # fmt: skip
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    try:
        while not server.started:  # uvicorn offers no event to wait on
            assert thread.is_alive()
            assert time.monotonic() < deadline
            time.sleep(0.005)
        yield f"https://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def test_under_tls_the_cookies_are_secure(tls_served: str, tls_files: TlsFiles) -> None:
    context = ssl.create_default_context(cafile=str(tls_files.ca_cert))
    with httpx.Client(base_url=tls_served, verify=context) as client:
        form = client.get("/login")
        assert "Secure" in form.headers["set-cookie"]
        signed = sign_in(client, "ann")
        assert signed.status_code == 303
        assert "Secure" in signed.headers["set-cookie"]
        assert "HttpOnly" in signed.headers["set-cookie"]
        assert signed.headers["strict-transport-security"].startswith("max-age=")


def test_no_ffmpeg_for_the_player_exits_2_before_serving(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The player decodes every recording with ffmpeg: without one, each recording opened
    # would fail in the browser. The port is taken, so a workstation that starts anyway
    # ends on uvicorn's bind error instead of serving for ever.
    assert runner.invoke(medasr, ["db", "upgrade"]).exit_code == 0
    missing = tmp_path / "no-such-ffmpeg"
    monkeypatch.setenv("PATH", path_without_ffmpeg())
    monkeypatch.setenv("IMAGEIO_FFMPEG_EXE", str(missing))
    find_ffmpeg.cache_clear()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = runner.invoke(medasr, ["web", "--port", str(port)])
    find_ffmpeg.cache_clear()
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == (
        f"medasr: configuration error: IMAGEIO_FFMPEG_EXE names {missing}, which is not an "
        "executable file: point it at an ffmpeg binary, or unset it to use the one "
        "imageio-ffmpeg installed"
    )


def test_a_port_in_use_exits_2_before_serving(runner: CliRunner) -> None:
    # 3 would say "credentials rejected" (uvicorn's own startup-failure code): a port
    # taken is a bad option, refused before the workstation says it serves.
    assert runner.invoke(medasr, ["db", "upgrade"]).exit_code == 0
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = runner.invoke(medasr, ["web", "--port", str(port)])
    assert result.exit_code == 2, result.output
    assert "serving" not in result.stdout
    assert result.stderr.strip() == (
        f"medasr: configuration error: web: cannot listen on 127.0.0.1:{port} "
        "(Address already in use)"
    )
