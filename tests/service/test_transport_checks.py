"""Issue 20 "Also": loopback is judged by addresses, and a token must be a header value.

A name is loopback only when every address it resolves to is (a `*.localhost` name can
resolve anywhere a resolver says); a name that does not resolve is refused as insecure
transport (a configuration error) that says so.
A token that cannot be an HTTP header value (a newline from a secrets file) is a
configuration error naming MEDASR_TOKEN, raised before any request, not a retryable
"could not reach the service".
"""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from config.errors import ConfigError
from config.settings import EncryptionSettings, ServiceSettings, load_settings
from service.client import TranscriptionClient
from service.docs_client import DocsClient, Document
from service.errors import InsecureTransport
from service.preflight import check_service_config
from service.status import check_transport
from tests.flows.prefect_server import clean_env
from tests.helpers.cli import medasr
from tests.recordings import write_tone_wav
from tests.servers import client_settings
from tests.service.client_call import transcribe

_real_getaddrinfo = socket.getaddrinfo

# What a resolver (a hosts file, a split-horizon DNS) might say about these names.
RESOLVED = {
    "evil.localhost": ["192.0.2.7"],
    "mixed.localhost": ["127.0.0.1", "192.0.2.7"],
    "dev.localhost": ["127.0.0.1", "::1"],
    "loop.example": ["127.0.0.5"],
}
UNRESOLVABLE = ("gone.localhost", "nowhere.invalid")


def _fake_getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> list[Any]:
    if host in UNRESOLVABLE:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    if host not in RESOLVED:
        return _real_getaddrinfo(host, port, *args, **kwargs)
    return [
        (
            socket.AF_INET6 if ":" in address else socket.AF_INET,
            socket.SOCK_STREAM,
            6,
            "",
            (address, port or 0),
        )
        for address in RESOLVED[host]
    ]


@pytest.fixture
def resolver(monkeypatch: pytest.MonkeyPatch) -> None:
    """Names resolve as RESOLVED says (DNS answers cannot be provoked over a real socket)."""
    monkeypatch.setattr(socket, "getaddrinfo", _fake_getaddrinfo)


@pytest.mark.usefixtures("resolver")
@pytest.mark.parametrize("host", ["evil.localhost", "mixed.localhost"])
def test_a_localhost_name_that_resolves_elsewhere_is_refused(devserver, host: str) -> None:
    url = f"http://{host}:8080"
    with pytest.raises(InsecureTransport, match="MEDASR_ALLOW_INSECURE_HTTP"):
        check_transport(url + "/voice/get-asr", allow_insecure_http=False)
    service, encryption = client_settings(devserver, base_url=url)
    with pytest.raises(InsecureTransport):
        TranscriptionClient(service, encryption)
    with pytest.raises(ConfigError, match="MEDASR_BASE_URL"):
        check_service_config(service=service, encryption=encryption)


@pytest.mark.usefixtures("resolver")
@pytest.mark.parametrize("host", UNRESOLVABLE)
def test_a_name_that_does_not_resolve_is_a_config_error(devserver, host: str) -> None:
    service, encryption = client_settings(devserver, base_url=f"http://{host}:8080")
    for refuse in (TranscriptionClient, DocsClient):
        with pytest.raises(InsecureTransport, match="MEDASR_BASE_URL") as caught:
            refuse(service, encryption)
        assert "does not resolve" in str(caught.value)
        assert "MEDASR_ALLOW_INSECURE_HTTP" in str(caught.value)
    with pytest.raises(ConfigError, match="does not resolve"):
        check_service_config(service=service, encryption=encryption)


@pytest.mark.usefixtures("resolver")
@pytest.mark.parametrize("host", ["dev.localhost", "loop.example", "localhost", "127.0.0.1"])
def test_a_name_whose_every_address_is_loopback_is_allowed(devserver, host: str) -> None:
    service, encryption = client_settings(devserver, base_url=f"http://{host}:1")
    asyncio.run(TranscriptionClient(service, encryption).aclose())
    check_service_config(service=service, encryption=encryption)


def test_https_and_allowed_http_need_no_resolution(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_dns(*args: Any, **kwargs: Any) -> list[Any]:
        raise AssertionError("resolved a name that needs no check")

    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    check_transport("https://gone.localhost/x", allow_insecure_http=False)
    check_transport("http://gone.localhost/x", allow_insecure_http=True)


# -- a token that cannot be a header value ----------------------------------------------

BAD_TOKENS = ["abc\ndef", "abc\r\nX-Evil: 1", "ab\x00cd", "t\u00f6ken", "ab\x7fcd"]
BAD_IDS = ["newline", "crlf-injection", "nul", "non-ascii", "del"]


@pytest.mark.parametrize("token", BAD_TOKENS, ids=BAD_IDS)
def test_a_token_that_is_no_header_value_is_a_config_error_before_sending(
    devserver_factory, token: str
) -> None:
    server = devserver_factory()
    with pytest.raises(ConfigError, match="MEDASR_TOKEN") as caught:
        transcribe(server, token=token, max_attempts=5)
    assert not caught.value.transient
    assert token not in str(caught.value)
    assert len(server.ledger) == 0


def _upload_with(server: Any, token: str) -> None:
    service, encryption = client_settings(server, token=token)
    document = Document(content=b"note", filename="a.txt", content_type="text/plain")

    async def call() -> None:
        async with DocsClient(service, encryption) as client:
            await client.upload(document)

    asyncio.run(call())


@pytest.mark.parametrize("token", BAD_TOKENS, ids=BAD_IDS)
def test_the_docs_client_refuses_it_too(devserver_factory, token: str) -> None:
    server = devserver_factory()
    with pytest.raises(ConfigError, match="MEDASR_TOKEN"):
        _upload_with(server, token)
    assert len(server.ledger) == 0


@pytest.mark.parametrize("token", BAD_TOKENS, ids=BAD_IDS)
def test_preflight_refuses_it_in_one_line(token: str) -> None:
    service = ServiceSettings(token=SecretStr(token))
    with pytest.raises(ConfigError, match=r"^MEDASR_TOKEN: ") as caught:
        check_service_config(service=service, encryption=EncryptionSettings())
    message = str(caught.value)
    assert "\n" not in message
    assert token not in message


def test_preflight_refuses_one_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEDASR_TOKEN", "first-line\nsecond-line")
    settings = load_settings()
    with pytest.raises(ConfigError, match=r"^MEDASR_TOKEN: "):
        check_service_config(service=settings.service, encryption=settings.encryption)


@pytest.mark.parametrize(
    "token", ["header.payload.signature", "  padded-token \n", "a+b/c=="], ids=repr
)
def test_good_tokens_pass_preflight(token: str) -> None:
    # Outer blanks are stripped by the settings; what is left is a header value.
    service = ServiceSettings(token=SecretStr(token))
    check_service_config(service=service, encryption=EncryptionSettings())


def test_medasr_run_exits_2_naming_medasr_token(devserver, tmp_path: Path) -> None:
    source = tmp_path / "archive"
    source.mkdir()
    env = clean_env(
        tmp_path / "prefect",
        MEDASR_BASE_URL=devserver.url,
        MEDASR_TOKEN="first-line\nsecond-line",
        MEDASR_DATABASE_URL=f"sqlite:///{tmp_path / 'medasr.db'}",
    )
    before = len(devserver.ledger)
    result = medasr("run", str(source), "--language", "en-IN", env=env, cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("medasr: configuration error: MEDASR_TOKEN")
    assert "second-line" not in result.stdout + result.stderr
    assert len(devserver.ledger) == before


def test_a_token_pasted_with_its_bearer_prefix_is_refused_unsent(devserver, tmp_path: Path) -> None:
    source = tmp_path / "archive"
    write_tone_wav(source / "note.wav", "case one. stable.")
    env = clean_env(
        tmp_path / "prefect",
        MEDASR_BASE_URL=devserver.url,
        MEDASR_TOKEN=f"Bearer {devserver.token}",
        MEDASR_DATABASE_URL=f"sqlite:///{tmp_path / 'medasr.db'}",
        MEDASR_PIPELINE__SETTLE_S="0",
    )
    before = len(devserver.ledger)
    result = medasr("run", str(source), "--language", "en-IN", env=env, cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("medasr: configuration error: MEDASR_TOKEN"), line
    assert "Bearer" in line, line
    assert devserver.token not in result.stdout + result.stderr
    assert len(devserver.ledger) == before
