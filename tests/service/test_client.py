"""The client against the devserver over real sockets: every row of the DESIGN.md §3 table."""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

import httpx
import pytest

from config.errors import ConfigError, RunStop
from service.client import RetryEvent, Transcription, TranscriptionClient, max_wav_bytes_for
from service.contract import MULTIPART_OVERHEAD_BYTES
from service.errors import (
    CredentialsRejected,
    EncryptionError,
    InsecureTransport,
    InvalidResponse,
    PayloadTooLarge,
    RequestRejected,
    ServiceRedirected,
    ServiceUnavailable,
    Throttled,
)
from service.http_client import ServiceSession
from service.retrying import Clock, RetryPolicy
from tests.helpers.virtual_clock import VirtualClock
from tests.servers import (
    DEVSERVER_JWE_KEY,
    DEVSERVER_JWE_KID,
    client_settings,
    make_tone_wav_bytes,
    make_wav_bytes,
)
from tests.service.client_call import WAV, transcribe


def test_success_returns_text_extras_and_one_attempt(devserver) -> None:
    before = len(devserver.ledger)
    result = transcribe(devserver, filename="chunk-0007.wav")
    entry = devserver.ledger.entries()[before]
    assert result.text
    assert result.attempts == 1
    assert result.latency_ms > 0
    assert result.extras["txn_id"] == entry.txn_id
    assert result.extras["audio_duration"] == pytest.approx(0.5)
    assert (entry.status, entry.filename, entry.language) == (200, "chunk-0007.wav", "en-IN")
    assert entry.sha256 == hashlib.sha256(WAV).hexdigest()
    assert not entry.encrypted


def test_tone_dictation_comes_back_exactly(devserver) -> None:
    text = "patient stable. follow up in 2 weeks"
    assert transcribe(devserver, make_tone_wav_bytes(text), language="hi").text == text


def test_concurrent_calls_share_one_pool(devserver_factory) -> None:
    server = devserver_factory(latency_ms=200)
    service, encryption = client_settings(server)
    wavs = [make_wav_bytes(seconds=0.2, seed=i) for i in range(8)]

    async def call_all() -> list[Transcription]:
        async with TranscriptionClient(service, encryption) as client:
            calls = [client.transcribe(w, language="ta") for w in wavs]
            return await asyncio.gather(*calls)

    results = asyncio.run(call_all())
    in_flight = [e.in_flight or 0 for e in server.ledger.entries()]
    assert max(in_flight) > 1  # in parallel, not one after another
    assert len({r.extras["txn_id"] for r in results}) == 8
    assert sorted(e.sha256 for e in server.ledger.entries()) == sorted(
        hashlib.sha256(w).hexdigest() for w in wavs
    )


# -- terminal rows: no retry ------------------------------------------------------------


async def _drop_authorization(request: httpx.Request) -> None:
    del request.headers["Authorization"]


def test_401_from_server_is_credentials_rejected(devserver_factory) -> None:
    server = devserver_factory()

    async def call() -> None:
        # The client always sends the header; a request hook removes it to provoke the 401.
        hooks: dict[str, list[Any]] = {"request": [_drop_authorization]}
        async with httpx.AsyncClient(event_hooks=hooks) as http:
            service, encryption = client_settings(server)
            await TranscriptionClient(service, encryption, http=http).transcribe(
                WAV, language="en-IN"
            )

    with pytest.raises(CredentialsRejected, match="MEDASR_TOKEN") as caught:
        asyncio.run(call())
    assert caught.value.status == 401
    assert "Unauthorized" in str(caught.value)
    assert server.ledger.statuses() == [401]


def test_403_wrong_token_is_credentials_rejected_without_retry(devserver_factory) -> None:
    server = devserver_factory()
    with pytest.raises(CredentialsRejected, match="MEDASR_TOKEN") as caught:
        transcribe(server, token="not-the-token", max_attempts=5)
    assert caught.value.status == 403
    assert not caught.value.transient
    assert "not-the-token" not in str(caught.value)
    assert server.ledger.statuses() == [403]


def test_403_after_auth_fail_after_requests(devserver_factory) -> None:
    server = devserver_factory(auth_fail_after=1)
    transcribe(server)
    with pytest.raises(CredentialsRejected):
        transcribe(server)
    assert server.ledger.statuses() == [200, 403]


def test_minted_token_is_accepted(devserver_factory) -> None:
    server = devserver_factory(token=None)
    assert server.token.count(".") == 2  # a JWT-shaped dev token
    assert transcribe(server).attempts == 1


@pytest.mark.parametrize("token", [None, "   ", " \n"], ids=["none", "spaces", "newline"])
def test_no_token_makes_no_request(devserver_factory, token: str | None) -> None:
    server = devserver_factory()
    with pytest.raises(CredentialsRejected, match=r"no token is set; set MEDASR_TOKEN"):
        transcribe(server, token=token)
    assert len(server.ledger) == 0


def test_413_from_server_is_payload_too_large(devserver_factory) -> None:
    server = devserver_factory(max_bytes=20_000)
    with pytest.raises(PayloadTooLarge, match="MEDASR_MAX_UPLOAD_BYTES") as caught:
        transcribe(server, make_wav_bytes(seconds=1.0), max_attempts=5)
    assert caught.value.status == 413
    assert server.ledger.statuses() == [413]


def test_over_the_cap_is_refused_before_sending(devserver_factory) -> None:
    server = devserver_factory()
    with pytest.raises(PayloadTooLarge, match="over the upload cap of 64000") as caught:
        transcribe(server, make_wav_bytes(seconds=2.5), max_upload_bytes=64_000)
    assert caught.value.status is None
    assert len(server.ledger) == 0


def test_other_4xx_is_request_rejected_without_retry(devserver_factory) -> None:
    server = devserver_factory()
    with pytest.raises(RequestRejected, match="HTTP 400") as caught:
        transcribe(server, b"RIFF not really a wav", max_attempts=5)
    assert caught.value.status == 400
    assert not caught.value.transient
    assert server.ledger.statuses() == [400]


@pytest.mark.parametrize("language", ["EN-in", "fr", "", "en_IN"], ids=repr)
def test_unsupported_language_makes_no_request(devserver_factory, language: str) -> None:
    server = devserver_factory()
    with pytest.raises(RequestRejected, match="unsupported language"):
        transcribe(server, language=language)
    assert len(server.ledger) == 0


# -- transient rows: retried within bounds ---------------------------------------------


@pytest.mark.parametrize(
    ("script", "statuses", "attempts"),
    [
        (("429", "ok"), [429, 200], 2),
        (("500", "ok"), [500, 200], 2),
        (("503", "503", "ok"), [503, 503, 200], 3),
        (("reset", "ok"), [0, 200], 2),
    ],
    ids=["429-then-ok", "500-then-ok", "503-twice-then-ok", "reset-then-ok"],
)
def test_transient_failures_are_retried(devserver_factory, script, statuses, attempts) -> None:
    server = devserver_factory(fault_script=script, retry_after_s=0)
    events: list[RetryEvent] = []
    result = transcribe(server, events=events, max_attempts=5)
    assert result.attempts == attempts
    assert server.ledger.statuses() == statuses
    assert [e.attempt for e in events] == list(range(1, attempts))
    assert all(0 <= e.wait_s <= 0.05 for e in events)  # full jitter under retry_max_backoff_s


@pytest.mark.parametrize(
    ("faults", "error", "status", "requests"),
    [
        ({"rate_503": 1.0}, ServiceUnavailable, 503, 4),
        ({"rate_500": 1.0}, ServiceUnavailable, 500, 2),  # the small budget for 500
        ({"rate_reset": 1.0}, ServiceUnavailable, None, 4),
    ],
    ids=["503", "500-small-budget", "reset"],
)
def test_retries_are_bounded_and_end_with_the_typed_error(
    devserver_factory, faults, error, status, requests
) -> None:
    server = devserver_factory(**faults)
    events: list[RetryEvent] = []
    with pytest.raises(error) as caught:
        transcribe(server, events=events, max_attempts=4)
    assert type(caught.value) is error
    assert caught.value.transient
    assert caught.value.status == status
    assert len(server.ledger) == requests
    assert len(events) == requests - 1


def _transcribe_on(clock: Clock, server: Any, **overrides: Any) -> Transcription:
    """One call whose budget, waits and attempt timeouts are read on `clock`."""
    service, encryption = client_settings(server, **overrides)
    policy = RetryPolicy.of(service)

    async def call() -> Transcription:
        async with ServiceSession(policy, ca_bundle=service.ca_bundle, clock=clock) as session:
            client = TranscriptionClient(service, encryption, session=session)
            return await client.transcribe(WAV, language="en-IN")

    return asyncio.run(call())


def test_throttling_uses_no_attempts_only_the_total_budget(devserver_factory) -> None:
    server = devserver_factory(rate_429=1.0, retry_after_s=0)
    clock = VirtualClock(attempt_s=0.05)  # each 429 costs 50 ms of the budget, on this clock
    with pytest.raises(Throttled) as caught:
        _transcribe_on(clock.clock(), server, max_attempts=2, retry_max_total_s=1.0)
    assert clock.now_s <= 1.0  # the total budget ended the call
    assert caught.value.status == 429
    assert len(server.ledger) > 2  # far past max_attempts: a 429 is not the chunk's fault


def test_slow_response_times_out_and_is_retried(devserver_factory) -> None:
    server = devserver_factory(rate_slow=1.0, slow_s=3.0)
    bounds_s: list[float] = []

    def timeout(seconds: float) -> Any:
        bounds_s.append(seconds)
        return asyncio.timeout(seconds)

    with pytest.raises(ServiceUnavailable, match=r"did not answer within 0.3 s") as caught:
        _transcribe_on(Clock(timeout=timeout), server, request_timeout_s=0.3, max_attempts=2)
    assert bounds_s == [0.3, 0.3]  # each attempt cut at 0.3 s, never the 3 s answer
    assert caught.value.status is None
    assert len(server.ledger) == 2


def test_connection_refused_is_service_unavailable(devserver_factory) -> None:
    server = devserver_factory()
    server.stop()
    with pytest.raises(ServiceUnavailable) as caught:
        transcribe(server, max_attempts=2)
    # Where it went, so a wrong MEDASR_BASE_URL or port shows; never a path or query.
    assert caught.value.message == f"could not reach the service at {server.url} (ConnectError)"


# -- malformed 200s: a real server would not produce them ------------------------------


def _mock_http(*responses: httpx.Response) -> tuple[httpx.AsyncClient, list[httpx.Request]]:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return responses[min(len(seen), len(responses)) - 1]

    return httpx.AsyncClient(transport=httpx.MockTransport(handler)), seen


@pytest.mark.parametrize(
    ("response", "match"),
    [
        (httpx.Response(200, content=b"<html>ok</html>"), "not JSON"),
        (httpx.Response(200, content=b"\xff\xfe\x00garbage"), "not JSON"),
        (httpx.Response(200, json=["text"]), "not an object"),
        (httpx.Response(200, json={"transcript": "x"}), "without a 'text' string"),
        (httpx.Response(200, json={"text": None}), "without a 'text' string"),
        (httpx.Response(200, json={"text": 12}), "without a 'text' string"),
        (httpx.Response(200, json={"ciphertext": "a", "iv": "b", "tag": "c"}), "encryption is off"),
    ],
    ids=["html", "binary", "array", "no-text", "null-text", "number-text", "encrypted-unasked"],
)
def test_malformed_200_is_invalid_response_without_retry(devserver, response, match) -> None:
    http, seen = _mock_http(response)
    with pytest.raises(InvalidResponse, match=match) as caught:
        transcribe(devserver, http=http, max_attempts=5)
    assert caught.value.status == 200
    assert len(seen) == 1


def test_redirect_stops_the_run_naming_only_where_it_points(devserver) -> None:
    moved = httpx.Response(302, headers={"Location": "https://elsewhere:8443/v2?id=7"})
    http, seen = _mock_http(moved)
    with pytest.raises(ServiceRedirected, match="redirect") as caught:
        transcribe(devserver, http=http)
    assert isinstance(caught.value, RunStop)
    assert "to https://elsewhere:8443)" in str(caught.value)
    assert "id=7" not in str(caught.value)
    assert len(seen) == 1


def test_request_shape_on_the_wire(devserver) -> None:
    http, seen = _mock_http(httpx.Response(200, json={"text": "ok", "txn_id": "t-1"}))
    result = transcribe(devserver, http=http, language="mr", filename="chunk-0003.wav")
    request = seen[0]
    assert (request.method, request.url.path) == ("POST", "/voice/get-asr")
    assert request.url.params["language"] == "mr"
    assert request.headers["Authorization"] == "Bearer test-token"
    assert request.headers["Content-Type"].startswith("multipart/form-data; boundary=")
    body = request.read()
    assert b'name="file"; filename="chunk-0003.wav"' in body
    assert b"Content-Type: audio/wav" in body
    assert WAV in body
    assert result.extras == {"txn_id": "t-1"}


# -- transport rules -----------------------------------------------------------------------


@pytest.mark.parametrize("base_url", ["http://example.org", "http://192.0.2.7:8080"])
def test_plain_http_to_a_remote_host_is_refused(devserver, base_url: str) -> None:
    service, encryption = client_settings(devserver, base_url=base_url)
    with pytest.raises(InsecureTransport, match="MEDASR_ALLOW_INSECURE_HTTP"):
        TranscriptionClient(service, encryption)
    allowed, _ = client_settings(devserver, base_url=base_url, allow_insecure_http=True)
    asyncio.run(TranscriptionClient(allowed, encryption).aclose())  # constructs; sends nothing


@pytest.mark.parametrize("base_url", ["http://localhost:1", "http://127.0.0.2:1", "http://[::1]:1"])
def test_plain_http_to_loopback_is_allowed(devserver, base_url: str) -> None:
    service, encryption = client_settings(devserver, base_url=base_url)
    asyncio.run(TranscriptionClient(service, encryption).aclose())


def test_unusable_base_url_or_ca_bundle_is_a_config_error(devserver, tmp_path) -> None:
    service, encryption = client_settings(devserver, base_url="ftp://files.example.org")
    with pytest.raises(ConfigError, match="MEDASR_BASE_URL"):
        TranscriptionClient(service, encryption)
    service, encryption = client_settings(
        devserver, base_url="https://example.org", ca_bundle=tmp_path / "missing.pem"
    )
    with pytest.raises(ConfigError, match="MEDASR_CA_BUNDLE"):
        TranscriptionClient(service, encryption)


# -- encrypted path ------------------------------------------------------------------------


@pytest.mark.parametrize("legacy_tag", [False, True], ids=["rfc7518-tag", "legacy-32-byte-tag"])
def test_encrypted_round_trip(devserver_factory, legacy_tag: bool) -> None:
    server = devserver_factory(
        jwe_key=DEVSERVER_JWE_KEY, jwe_kid=DEVSERVER_JWE_KID, legacy_response_tag=legacy_tag
    )
    text = "bp 120/80. no fever"
    result = transcribe(server, make_tone_wav_bytes(text))
    assert result.text == text
    assert result.extras["txn_id"].startswith("dev-")
    [entry] = server.ledger.entries()
    assert entry.encrypted
    assert entry.status == 200
    assert entry.filename is None


def test_tampered_encrypted_response_is_an_encryption_error(devserver_factory) -> None:
    server = devserver_factory(jwe_key=DEVSERVER_JWE_KEY, tamper_responses=True)
    with pytest.raises(EncryptionError, match="tag does not match"):
        transcribe(server, max_attempts=5)
    assert len(server.ledger) == 1


def test_encrypted_with_the_wrong_key_is_refused_by_the_server(devserver_factory) -> None:
    server = devserver_factory(jwe_key=DEVSERVER_JWE_KEY)
    with pytest.raises(RequestRejected, match="HTTP 400"):
        transcribe(server, jwe_key="fedcba9876543210")
    assert server.ledger.statuses() == [400]


def _wav_of_size(size_bytes: int) -> bytes:
    frames = (size_bytes - 44) // 2
    wav = make_wav_bytes(seconds=frames / 16_000)
    assert len(wav) == 44 + 2 * frames
    return wav


@pytest.mark.parametrize("encrypted", [False, True], ids=["plain", "encrypted"])
def test_max_wav_bytes_fits_the_cap_exactly(devserver_factory, encrypted: bool) -> None:
    cap = 100_000
    key = {"jwe_key": DEVSERVER_JWE_KEY, "jwe_kid": DEVSERVER_JWE_KID} if encrypted else {}
    server = devserver_factory(max_bytes=cap, **key)
    service, encryption = client_settings(server, max_upload_bytes=cap)
    limit = max_wav_bytes_for(service, encryption)
    client = TranscriptionClient(service, encryption)
    assert client.max_wav_bytes == limit
    asyncio.run(client.aclose())
    if encrypted:
        assert cap // 2 < limit < cap // 1.3  # base64 + JSON + base64url: about 1.8x
    else:
        assert limit == cap - MULTIPART_OVERHEAD_BYTES
    assert transcribe(server, _wav_of_size(limit), max_upload_bytes=cap).attempts == 1
    if encrypted:  # one frame more no longer fits: refused before sending
        with pytest.raises(PayloadTooLarge):
            transcribe(server, _wav_of_size(limit + 2), max_upload_bytes=cap)
    assert server.ledger.statuses() == [200]
