"""`medasr devserver`: the local stand-in of the transcription service, in the foreground."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from service.devserver import DevServerConfig, DevServerState, serve_devserver

_ENV = "MEDASR_DEVSERVER_"


def _option(help_text: str, name: str) -> Any:
    return typer.Option(help=help_text, envvar=_ENV + name)


def devserver_command(
    host: Annotated[str, _option("Address to listen on.", "HOST")] = "127.0.0.1",
    port: Annotated[int, _option("Port (0 = any free port).", "PORT")] = 8765,
    token: Annotated[
        str | None, _option("Static accepted bearer token; without it one is minted.", "TOKEN")
    ] = None,
    jwe_key: Annotated[
        str | None, _option("Shared JWE key string (16 characters).", "JWE_KEY")
    ] = None,
    jwe_kid: Annotated[str | None, _option("JWE key id.", "JWE_KID")] = None,
    max_bytes: Annotated[int, _option("Largest request body accepted.", "MAX_BYTES")] = 5_000_000,
    latency_ms: Annotated[float, _option("Added latency per request, ms.", "LATENCY_MS")] = 0.0,
    rate_429: Annotated[float, _option("Share of requests throttled (429).", "RATE_429")] = 0.0,
    retry_after_s: Annotated[
        int, _option("Retry-After sent with 429, seconds.", "RETRY_AFTER_S")
    ] = 1,
    retry_after_http_date: Annotated[
        bool, _option("Send Retry-After as an HTTP-date.", "RETRY_AFTER_HTTP_DATE")
    ] = False,
    rate_500: Annotated[float, _option("Share of requests failing with 500.", "RATE_500")] = 0.0,
    rate_503: Annotated[float, _option("Share of requests failing with 503.", "RATE_503")] = 0.0,
    rate_reset: Annotated[
        float, _option("Share of connections dropped mid-reply.", "RATE_RESET")
    ] = 0.0,
    rate_slow: Annotated[float, _option("Share of replies sent slowly.", "RATE_SLOW")] = 0.0,
    slow_s: Annotated[float, _option("How long a slow reply takes, seconds.", "SLOW_S")] = 2.0,
    fault_script: Annotated[
        str, _option("Faults for the first requests, e.g. '429,503,ok'.", "FAULT_SCRIPT")
    ] = "",
    auth_fail_after: Annotated[
        int | None, _option("Answer 403 after this many accepted requests.", "AUTH_FAIL_AFTER")
    ] = None,
    ledger: Annotated[
        Path | None, _option("Append one JSON line per request to this file.", "LEDGER")
    ] = None,
    seed: Annotated[int, _option("Seed of the fault draws.", "SEED")] = 0,
    engine: Annotated[str, _option("Engine: default, tone or hash.", "ENGINE")] = "default",
    legacy_response_tag: Annotated[
        bool, _option("Tag encrypted replies with the 32-byte HMAC.", "LEGACY_RESPONSE_TAG")
    ] = False,
) -> None:
    """Run the local stand-in of the transcription service until interrupted."""
    config = DevServerConfig(
        host=host,
        port=port,
        token=token,
        jwe_key=jwe_key,
        jwe_kid=jwe_kid,
        max_bytes=max_bytes,
        latency_ms=latency_ms,
        rate_429=rate_429,
        retry_after_s=retry_after_s,
        retry_after_http_date=retry_after_http_date,
        rate_500=rate_500,
        rate_503=rate_503,
        rate_reset=rate_reset,
        rate_slow=rate_slow,
        slow_s=slow_s,
        fault_script=tuple(name.strip() for name in fault_script.split(",") if name.strip()),
        auth_fail_after=auth_fail_after,
        ledger_path=ledger,
        seed=seed,
        engine=engine,
        legacy_response_tag=legacy_response_tag,
    )
    serve_devserver(config, on_ready=_announce)


def _announce(url: str, state: DevServerState) -> None:
    # The one place a token is printed on purpose: a minted, throwaway dev token.
    # A static token came from the user and is never echoed.
    if state.tokens.minted:
        detail = f"MEDASR_TOKEN={state.tokens.token}"
    else:
        detail = "accepting the static token given with --token"
    typer.echo(f"medasr devserver listening on {url} ({detail})")
