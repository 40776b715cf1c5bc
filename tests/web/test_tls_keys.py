"""`medasr web`'s TLS key: one that does not match its certificate, cannot be read, is not
a key, or is readable by others is refused with one line and exit 2, before serving."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from config.errors import ConfigError
from config.settings import Settings
from flows.cli import app as medasr
from tests.service.tls_certs import make_tls_files
from web.command import check_transport


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def refused(runner: CliRunner, cert: Path, key: Path) -> str:
    key.chmod(0o600)  # private, as a key must be: refused for what it holds
    env = {"MEDASR_WEB__TLS_CERT": str(cert), "MEDASR_WEB__TLS_KEY": str(key)}
    result = runner.invoke(medasr, ["web", "--port", str(free_port())], env=env)
    assert result.exit_code == 2, result.output
    assert "serving" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def test_a_key_of_another_certificate_is_refused(runner: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    ours, theirs = make_tls_files(tmp_path / "a"), make_tls_files(tmp_path / "b")
    line = refused(runner, ours.server_cert, theirs.server_key)
    assert "does not match" in line


def test_a_garbage_key_is_refused(runner: CliRunner, tmp_path: Path) -> None:
    files = make_tls_files(tmp_path)
    garbage = "-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n"
    files.server_key.write_text(garbage)
    line = refused(runner, files.server_cert, files.server_key)
    assert str(files.server_key) in line


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file: unreadable cannot be made")
def test_an_unreadable_key_is_refused(runner: CliRunner, tmp_path: Path) -> None:
    files = make_tls_files(tmp_path)
    files.server_key.chmod(0)
    assert "cannot be read" in refused(runner, files.server_cert, files.server_key)


def test_a_key_readable_by_others_is_refused_with_the_reason(tmp_path: Path) -> None:
    files = make_tls_files(tmp_path)
    files.server_key.chmod(0o644)
    settings = Settings(
        web={"tls_cert": files.server_cert, "tls_key": files.server_key},
        storage={"database_url": f"sqlite:///{tmp_path}/m.db"},
    )
    with pytest.raises(ConfigError, match="readable by others"):
        check_transport(settings, host="127.0.0.1")
    files.server_key.chmod(0o600)
    assert check_transport(settings, host="127.0.0.1") is True
