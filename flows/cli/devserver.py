"""`medasr devserver`: the local stand-in of the transcription service, in the foreground.

The options come from one table: each row is a flag `--<name with dashes>`, an
environment variable MEDASR_DEVSERVER_<NAME> and, unless it says otherwise, the
DevServerConfig field of the same name, whose default it shows.
"""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from devserver import DevServerConfig, DevServerState, serve_devserver

_ENV = "MEDASR_DEVSERVER_"


@dataclass(frozen=True)
class _Flag:
    """One option of the command."""

    name: str  # the Python parameter: --rate-429 is "rate_429"
    kind: Any  # its type as Typer reads it
    help: str
    field: str | None = None  # the DevServerConfig field, when it is named differently


_FLAGS = (
    _Flag("host", str, "Address to listen on."),
    _Flag("port", int, "Port (0 = any free port)."),
    _Flag("token", str | None, "Static accepted bearer token; without it one is minted."),
    _Flag("token_ttl_s", float, "Lifetime of the minted dev token, seconds."),
    _Flag("jwe_key", str | None, "Shared JWE key string (16 characters)."),
    _Flag("jwe_kid", str | None, "JWE key id."),
    _Flag("max_bytes", int, "Largest request body accepted."),
    _Flag("latency_ms", float, "Added latency per request, ms."),
    _Flag("rate_429", float, "Share of requests throttled (429)."),
    _Flag("retry_after_s", int, "Retry-After sent with 429, seconds."),
    _Flag("retry_after_http_date", bool, "Send Retry-After as an HTTP-date."),
    _Flag("rate_500", float, "Share of requests failing with 500."),
    _Flag("rate_502", float, "Share of requests failing with 502."),
    _Flag("rate_503", float, "Share of requests failing with 503."),
    _Flag("rate_504", float, "Share of requests failing with 504."),
    _Flag("rate_reset", float, "Share of connections dropped mid-reply."),
    _Flag("rate_slow", float, "Share of replies sent slowly."),
    _Flag("rate_badjson", float, "Share of 200 replies whose body is not JSON."),
    _Flag("rate_notext", float, 'Share of 200 JSON replies without "text".'),
    _Flag("rate_endless", float, "Share of replies whose body never ends."),
    _Flag("slow_s", float, "How long a slow reply takes, seconds."),
    _Flag("p_empty", float, "Share of answers whose text is emptied (quality gate: empty_text)."),
    _Flag("p_repeat", float, "Share of answers ending in a word loop (quality gate: repetition)."),
    _Flag("p_wrong_script", float, "Share of answers in another script (script_mismatch)."),
    _Flag("fault_script", str, "Faults for the first requests, e.g. '429,503,ok'."),
    _Flag("auth_fail_after", int | None, "Answer 403 after this many accepted requests."),
    _Flag("ledger", Path | None, "Append one JSON line per request to this file.", "ledger_path"),
    _Flag("seed", int, "Seed of the fault draws."),
    _Flag("engine", str, "Engine: default, tone or hash."),
    _Flag(
        "fhir_answer",
        str,
        "How a FHIR create is answered: resource; outcome (201, an OperationOutcome, no "
        "Location); foreign (Location on another host); patient (Location at a Patient); "
        "refuse (422, long diagnostics quoting the subject, nothing filed); first (200 with "
        "the first resource filed, whatever was sent).",
    ),
    _Flag("legacy_response_tag", bool, "Tag encrypted replies with the 32-byte HMAC."),
    _Flag("capacity", int | None, "Answer 429 when this many requests are already in flight."),
    _Flag("rate", float | None, "Answer 429 beyond this many requests per second (a bucket)."),
)

_DEFAULTS = DevServerConfig()


def _default(flag: _Flag) -> Any:
    if flag.name == "fault_script":  # a tuple in the config, "a,b,c" on the command line
        return ",".join(_DEFAULTS.fault_script)
    return getattr(_DEFAULTS, flag.field or flag.name)


def _parameter(flag: _Flag) -> inspect.Parameter:
    # A switch is one flag: a `--no-` twin would only narrow the column the
    # variable names are printed in until they are cut off.
    names = ("--" + flag.name.replace("_", "-"),) if flag.kind is bool else ()
    option = typer.Option(*names, help=flag.help, envvar=_ENV + flag.name.upper())
    return inspect.Parameter(
        flag.name,
        inspect.Parameter.KEYWORD_ONLY,
        default=_default(flag),
        annotation=Annotated[flag.kind, option],
    )


def config_from_options(**options: Any) -> DevServerConfig:
    """The DevServerConfig for the given options (by parameter name); raises ConfigError."""
    fields: dict[str, Any] = {}
    for flag in _FLAGS:
        if flag.name in options:
            fields[flag.field or flag.name] = options.pop(flag.name)
    if options:
        raise TypeError(f"unknown devserver options: {sorted(options)}")
    if isinstance(fields.get("fault_script"), str):
        names = fields["fault_script"].split(",")
        fields["fault_script"] = tuple(name.strip() for name in names if name.strip())
    return dataclasses.replace(_DEFAULTS, **fields)


def devserver_command(**options: Any) -> None:
    """Run the local stand-in of the transcription service until interrupted."""
    serve_devserver(config_from_options(**options), on_ready=_announce)


# Typer reads the options from the signature; the table above is its single source.
devserver_command.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [_parameter(flag) for flag in _FLAGS], return_annotation=None
)


def _announce(url: str, state: DevServerState) -> None:
    # The one place a token is printed on purpose: a minted, throwaway dev token.
    # A static token came from the user and is never echoed.
    if state.tokens.minted:
        detail = f"MEDASR_TOKEN={state.tokens.token}"
    else:
        detail = "accepting the static token given with --token"
    typer.echo(f"medasr devserver listening on {url} ({detail})")
