"""HTTP statuses and transport rules as typed errors (docs/service-contract.md), in one place."""

from __future__ import annotations

import email.utils
import ipaddress
import math
import re
import socket
import ssl
import time
from pathlib import Path

import httpx
from pydantic import SecretStr

from config.errors import ConfigError, MedasrError
from service.answers import json_or_none
from service.errors import (
    CredentialsRejected,
    InsecureTransport,
    PayloadTooLarge,
    RequestRejected,
    ServiceRedirected,
    ServiceUnavailable,
    Throttled,
    TlsNotVerified,
)

_MAX_QUOTED_MESSAGE_CHARS = 80
LONGEST_RETRY_AFTER_S = 7 * 86_400.0  # a week: longer than MEDASR_SERVICE__RETRY_MAX_TOTAL_S
# Visible ASCII and inner spaces: what every HTTP stack sends as a header value unchanged.
_HEADER_SAFE = re.compile(r"[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?")


def resolved_addresses(host: str) -> set[str]:
    """The addresses `host` names (itself for an address); empty when it does not resolve."""
    bare = host.strip("[]")
    try:
        return {str(ipaddress.ip_address(bare))}
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(bare, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return set()
    return {str(info[4][0]) for info in infos}


def is_loopback_address(address: str) -> bool:
    try:  # an IPv6 address may carry a zone: fe80::1%eth0
        return ipaddress.ip_address(address.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def check_transport(
    url: str, *, allow_insecure_http: bool, setting: str = "MEDASR_BASE_URL"
) -> str:
    """The URL if we may send patient data to it; raises InsecureTransport or ConfigError.

    `setting` is the setting that holds the URL, named in every message.
    """
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise ConfigError(f"{setting}: the service URL is not a valid URL") from exc
    if parsed.scheme not in ("https", "http"):
        raise ConfigError(
            f"{setting}: the service URL must be https://host (got scheme {parsed.scheme!r})"
        )
    if not parsed.host:
        raise ConfigError(f"{setting}: the service URL has no host; use https://host")
    if parsed.port is not None and not 0 < parsed.port < 65536:
        raise ConfigError(
            f"{setting}: port {parsed.port} is out of range (1-65535) in the service URL"
        )
    _refuse_extra_parts(parsed, setting=setting)
    if parsed.scheme == "https" or allow_insecure_http:
        return url
    # Judged by address, never by name: `x.localhost` can resolve anywhere a resolver says.
    addresses = resolved_addresses(parsed.host)
    if addresses and all(is_loopback_address(a) for a in addresses):
        return url
    why = "which is not a loopback address"
    if not addresses:
        why = "whose name does not resolve, so it cannot be checked to be loopback"
    raise InsecureTransport(
        f"{setting}: refusing to send patient data over plain http:// to {parsed.host[:64]}, "
        f"{why}; use https:// or set MEDASR_ALLOW_INSECURE_HTTP=true"
    )


def _refuse_extra_parts(parsed: httpx.URL, *, setting: str) -> None:
    """httpx turns a user in the URL into Basic credentials sent instead of the token, and
    a query or fragment swallows the path appended after it: neither may reach a request."""
    extra = [
        name
        for name, present in (
            ("a user or password (user@)", bool(parsed.userinfo)),
            ("a query (?...)", bool(parsed.query)),
            ("a fragment (#...)", bool(parsed.fragment)),
        )
        if present
    ]
    if extra:
        raise ConfigError(
            f"{setting}: the service URL carries {' and '.join(extra)}; give only "
            "scheme://host[:port][/path] (the token goes in its own setting)"
        )


def require_token(token: SecretStr | None, *, setting: str = "MEDASR_TOKEN") -> None:
    """Before anything starts: a missing token is a configuration error (ConfigError)."""
    if token is None:
        raise ConfigError(
            f"no token is set: set {setting} to the bearer token the service gave you "
            "(nothing was started or sent)"
        )


def bearer_token(token: SecretStr | None, *, setting: str = "MEDASR_TOKEN") -> str:
    """The token to send as `Bearer <token>`; raises CredentialsRejected or ConfigError.

    A missing token stops the run (CredentialsRejected); one holding a character that
    cannot go in an HTTP header (a newline from a secrets file, a control or non-ASCII
    character), or pasted with its `Bearer ` prefix, is a configuration error. No
    message shows the token.
    """
    if token is None:  # ServiceSettings turns a blank token into None
        raise CredentialsRejected(f"no token is set; set {setting}")
    value = token.get_secret_value()
    if value[:7].lower() == "bearer ":  # pasted from a header: sent, "Bearer Bearer ..."
        raise ConfigError(
            f"{setting}: the token starts with 'Bearer '; give the token alone "
            "(medasr adds 'Bearer ' itself)"
        )
    if not _HEADER_SAFE.fullmatch(value):
        raise ConfigError(
            f"{setting}: the token holds a character that cannot be sent in an HTTP header "
            "(a line break, a control or a non-ASCII character); check where it is read from"
        )
    return value


def tls_verify(ca_bundle: Path | None) -> ssl.SSLContext | bool:
    """httpx `verify=`: the system CAs, or only those of ca_bundle; raises ConfigError."""
    if ca_bundle is None:
        return True
    if not ca_bundle.is_file():
        raise ConfigError(f"MEDASR_CA_BUNDLE: {ca_bundle} does not exist or is not a file")
    try:
        return ssl.create_default_context(cafile=str(ca_bundle))
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"MEDASR_CA_BUNDLE: cannot load {ca_bundle} as a PEM CA bundle") from exc


def certificate_failure(exc: BaseException) -> TlsNotVerified | None:
    """TlsNotVerified when `exc` was caused by a failed certificate check, else None."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:  # httpx -> httpcore -> ssl
        if isinstance(cause, ssl.SSLCertVerificationError):
            return TlsNotVerified(
                "the service's TLS certificate could not be verified "
                f"({cause.verify_message or 'verification failed'}); check that "
                "MEDASR_BASE_URL names the certificate's host and, for a private CA, "
                "point MEDASR_CA_BUNDLE at that CA's PEM file"
            )
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return None


def parse_retry_after(value: str | None, *, now_s: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After value (delay seconds or HTTP-date), at most
    LONGEST_RETRY_AFTER_S; None if unusable."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            moment = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
        if moment.tzinfo is None:  # HTTP-dates are GMT; an obsolete form may omit the zone
            return None
        seconds = moment.timestamp() - (time.time() if now_s is None else now_s)
    if not math.isfinite(seconds):
        return None
    # Past any request's budget (a day at most) every wait ends the same way; capped, a
    # 300-digit value does not end up in a failure's message.
    return min(max(0.0, seconds), LONGEST_RETRY_AFTER_S)


def _quoted_message(response: httpx.Response, *, token: str) -> str:
    """`: "Forbidden"` from a short JSON error body, or '' (never quotes the token)."""
    message = _short_message(response, token=token)
    return f": {message!r}" if message else ""


def _short_message(response: httpx.Response, *, token: str) -> str:
    """The short, printable `message` of a JSON error body without the token, or ''."""
    body = json_or_none(response)
    message = body.get("message") if isinstance(body, dict) else None
    if not isinstance(message, str) or not message.isprintable():
        return ""
    if len(message) > _MAX_QUOTED_MESSAGE_CHARS or (token and token in message):
        return ""
    return message


def origin_of(url: httpx.URL) -> str:
    """scheme://host[:port] of `url`: where a request went, without its user, path or
    query (a delivery's query may carry a patient's identifiers)."""
    host = f"[{url.host}]" if ":" in url.host else url.host  # an IPv6 address
    port = "" if url.port is None else f":{url.port}"
    return f"{url.scheme}://{host}{port}"


def _moved_to(response: httpx.Response) -> str:
    """` to https://host:port`: the origin a redirect names (never its path or query), or ''."""
    try:
        target = response.url.join(response.headers.get("location", ""))
    except (httpx.InvalidURL, ValueError, RuntimeError):  # RuntimeError: no request kept
        return ""
    if not target.host or target.scheme not in ("http", "https"):
        return ""
    return f" to {origin_of(target)[:80]}"


def private_error_for_status(
    response: httpx.Response, *, sent_bytes: int, token: str
) -> MedasrError:
    """error_for_status for an endpoint whose words may name the patient (the document
    upload): the body's `message` is the error's `detail`, kept with the row, not logged."""
    error = error_for_status(response, sent_bytes=sent_bytes, token=token, quote=False)
    error.detail = _short_message(response, token=token)
    return error


def error_for_status(
    response: httpx.Response,
    *,
    sent_bytes: int,
    token: str,
    who: str = "the service",
    url_setting: str = "MEDASR_BASE_URL",
    quote: bool = True,
    refused_advice: str = "",
) -> MedasrError:
    """The typed error for a non-2xx answer (401/403, 413, 429, 5xx, other) from `who`, set
    at `url_setting`; `quote=False`: its words may name the patient (not for a log line);
    `refused_advice` ends a 413's message: what the endpoint's caller does about one."""
    status = response.status_code
    said = _quoted_message(response, token=token) if quote else ""
    if status in (401, 403):
        return CredentialsRejected(
            f"{who} rejected the token (HTTP {status}{said}); check MEDASR_TOKEN", status=status
        )
    if status == 413:
        return PayloadTooLarge(
            f"{who} refused a {sent_bytes}-byte request as too large (HTTP 413){refused_advice}",
            status=status,
        )
    retry_after_s = parse_retry_after(response.headers.get("retry-after"))
    if status == 429:
        after = "" if retry_after_s is None else f", retry after {retry_after_s:.1f} s"
        said = f"{who} is throttling requests (HTTP 429{after})"
        return Throttled(said, status=status, retry_after_s=retry_after_s)
    if status >= 500:
        return ServiceUnavailable(
            f"{who} failed (HTTP {status}{said})", status=status, retry_after_s=retry_after_s
        )
    if 300 <= status < 400:
        return _redirected(response, who=who, url_setting=url_setting)
    return RequestRejected(f"{who} rejected the request (HTTP {status}{said})", status=status)


def _redirected(response: httpx.Response, *, who: str, url_setting: str) -> ServiceRedirected:
    """A 3xx: not followed (the token stays with its origin), and every request would meet
    it, so the URL at `url_setting` is what to fix."""
    status = response.status_code
    return ServiceRedirected(
        f"{who} answered with a redirect (HTTP {status}{_moved_to(response)}); check {url_setting}",
        status=status,
    )
