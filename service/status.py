"""HTTP statuses and transport rules as typed errors (the DESIGN.md §3 table), in one place."""

from __future__ import annotations

import email.utils
import ipaddress
import math
import ssl
import time
from pathlib import Path

import httpx

from config.errors import ConfigError, MedasrError
from service.errors import (
    CredentialsRejected,
    InsecureTransport,
    PayloadTooLarge,
    RequestRejected,
    ServiceUnavailable,
    Throttled,
    TlsNotVerified,
)

_MAX_QUOTED_MESSAGE_CHARS = 80


def is_loopback_host(host: str) -> bool:
    """True for localhost and loopback addresses (127.0.0.0/8, ::1)."""
    if host.lower() == "localhost" or host.lower().endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_transport(url: str, *, allow_insecure_http: bool) -> str:
    """The URL if we may send patient audio to it; raises InsecureTransport or ConfigError."""
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise ConfigError("MEDASR_BASE_URL: the service URL is not a valid URL") from exc
    if parsed.scheme not in ("https", "http"):
        raise ConfigError(
            f"MEDASR_BASE_URL: the service URL must be https://host (got scheme {parsed.scheme!r})"
        )
    if not parsed.host:
        raise ConfigError("MEDASR_BASE_URL: the service URL has no host; use https://host")
    if parsed.port is not None and not 0 < parsed.port < 65536:
        raise ConfigError(
            f"MEDASR_BASE_URL: port {parsed.port} is out of range (1-65535) in the service URL"
        )
    if parsed.scheme == "https" or allow_insecure_http or is_loopback_host(parsed.host):
        return url
    raise InsecureTransport(
        f"MEDASR_BASE_URL: refusing to send patient audio over plain http:// to {parsed.host}; "
        "use https:// or set MEDASR_ALLOW_INSECURE_HTTP=true"
    )


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
    """Seconds to wait from a Retry-After value (delay seconds or HTTP-date); None if unusable."""
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
    return max(0.0, seconds)


def _quoted_message(response: httpx.Response, *, token: str) -> str:
    """`: "Forbidden"` from a short JSON error body, or '' (never quotes the token)."""
    try:
        body = response.json()
    except ValueError:
        return ""
    message = body.get("message") if isinstance(body, dict) else None
    if not isinstance(message, str) or not message.isprintable():
        return ""
    if len(message) > _MAX_QUOTED_MESSAGE_CHARS or (token and token in message):
        return ""
    return f": {message!r}"


def error_for_status(response: httpx.Response, *, sent_bytes: int, token: str) -> MedasrError:
    """The typed error for a non-2xx answer (401/403, 413, 429, 5xx, other)."""
    status = response.status_code
    said = _quoted_message(response, token=token)
    if status in (401, 403):
        return CredentialsRejected(
            f"the service rejected the token (HTTP {status}{said}); check MEDASR_TOKEN",
            status=status,
        )
    if status == 413:
        return PayloadTooLarge(
            f"the service refused a {sent_bytes}-byte request as too large (HTTP 413); "
            "lower MEDASR_MAX_UPLOAD_BYTES and rerun (audio already answered is not sent again)",
            status=status,
        )
    retry_after_s = parse_retry_after(response.headers.get("retry-after"))
    if status == 429:
        after = "" if retry_after_s is None else f", retry after {retry_after_s:.1f} s"
        return Throttled(
            f"the service is throttling requests (HTTP 429{after})",
            status=status,
            retry_after_s=retry_after_s,
        )
    if status >= 500:
        return ServiceUnavailable(
            f"the service failed (HTTP {status}{said})", status=status, retry_after_s=retry_after_s
        )
    if 300 <= status < 400:
        return RequestRejected(
            f"the service answered with a redirect (HTTP {status}); check MEDASR_BASE_URL",
            status=status,
        )
    return RequestRejected(f"the service rejected the request (HTTP {status}{said})", status=status)
