"""The token, the JWE key and transcript text never reach logs, output or error messages."""

from __future__ import annotations

import asyncio
import logging

import pytest

from config.errors import MedasrError
from service.client import RetryEvent, TranscriptionClient
from tests.servers import client_settings, make_tone_wav_bytes

TOKEN = "tok-4f9a1c7e2b"
JWE_KEY = "k3y-s3cr3t-16chr"
TEXT = "confidential diagnosis zebra"


def test_secrets_and_text_stay_out_of_logs(devserver_factory, caplog, capfd) -> None:
    caplog.set_level(logging.DEBUG)
    plain = devserver_factory(token=TOKEN, fault_script=("429", "503", "ok"), retry_after_s=0)
    encrypted = devserver_factory(token=TOKEN, jwe_key=JWE_KEY, jwe_kid="kid-1")
    wav = make_tone_wav_bytes(TEXT)
    events: list[RetryEvent] = []
    texts, errors = [], []

    async def run(server, **overrides) -> None:
        service, encryption = client_settings(server, **overrides)
        async with TranscriptionClient(service, encryption, on_retry=events.append) as client:
            try:
                texts.append((await client.transcribe(wav, language="en-IN")).text)
            except MedasrError as exc:
                errors.append(exc)

    asyncio.run(run(plain))
    asyncio.run(run(encrypted))
    asyncio.run(run(plain, token=TOKEN[::-1]))  # rejected: 403
    asyncio.run(run(encrypted, jwe_key=JWE_KEY[::-1]))  # refused by the server: 400

    assert texts == [TEXT, TEXT]
    assert [e.kind for e in errors] == ["credentials_rejected", "request_rejected"]
    assert [e.status for e in events] == [429, 503]
    logged = caplog.text + "\n".join(repr(r.args) for r in caplog.records)
    assert "transcribe attempt=" in logged
    assert "httpcore" in logged
    out, err = capfd.readouterr()
    shown = "\n".join([logged, out, err, *map(str, errors), *map(repr, events)])
    for secret in (TOKEN, TOKEN[::-1], JWE_KEY, JWE_KEY[::-1], TEXT, "zebra"):
        assert secret not in shown, secret


@pytest.mark.parametrize("secret", [JWE_KEY, TOKEN])
def test_settings_reprs_hide_secrets(devserver, secret: str) -> None:
    service, encryption = client_settings(devserver, token=TOKEN, jwe_key=JWE_KEY)
    assert secret not in repr(service) + repr(encryption)
