"""One door of a service, as data: where to post, as whom, sealed how, what its answers mean.

A thin endpoint client (transcription, documents, a FHIR server...) describes its door
as an `Endpoint` and what it sends as a `FilePart` or a `RawBody`; `ServiceSession`
does the rest. An Endpoint checks its URL when it is made, so none exists that would
send patient data in clear text to a remote host.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import httpx
from pydantic import SecretStr

from config.errors import ConfigError, MedasrError
from config.settings import EncryptionSettings, ServiceSettings
from service import jwe
from service.contract import SERVICE_MAX_UPLOAD_BYTES
from service.status import check_transport, error_for_status


class StatusTranslator(Protocol):
    """Turns a non-2xx answer into the typed error of that endpoint (retried if transient)."""

    def __call__(self, response: httpx.Response, *, sent_bytes: int, token: str) -> MedasrError:
        """The error for `response`; never quotes `token`."""
        ...


@dataclass(frozen=True)
class Endpoint:
    """Where one thin client posts; raises ConfigError (InsecureTransport) for a bad URL.

    `*_setting` name the settings that error messages point a person at.
    """

    url: str  # the full URL, path included
    token: SecretStr | None  # the bearer token; None is refused at call time
    key: jwe.JweKey | None = None  # seal every request as JWE (and open sealed answers)
    max_body_bytes: int = SERVICE_MAX_UPLOAD_BYTES
    label: str = "service"  # names the endpoint in log lines: "transcribe attempt=2 ..."
    translate: StatusTranslator = error_for_status
    allow_insecure_http: bool = False
    url_setting: str = "MEDASR_BASE_URL"
    token_setting: str = "MEDASR_TOKEN"  # noqa: S105 (the name of a setting, not a secret)
    cap_setting: str = "MEDASR_MAX_UPLOAD_BYTES"
    too_large_advice: str = ""  # appended to the refusal of an oversized request
    # False where the receiver files every copy (documents): a request that may have
    # arrived is never sent again by the session; the caller judges it (in doubt).
    resend_unanswered: bool = True

    def __post_init__(self) -> None:
        check_transport(
            self.url, allow_insecure_http=self.allow_insecure_http, setting=self.url_setting
        )


@dataclass(frozen=True)
class FilePart:
    """A file in the multipart field `file`, or `{"file": "<base64>"}` inside a JWE envelope."""

    content: bytes = field(repr=False)  # audio or a transcript: never in a repr or a log line
    filename: str
    content_type: str
    noun: str = "file"  # what messages call it: "the WAV file would be ... bytes"


@dataclass(frozen=True)
class RawBody:
    """Bytes sent as the body itself (e.g. application/fhir+json); the JWE plaintext if sealed."""

    content: bytes = field(repr=False)
    content_type: str


Payload = FilePart | RawBody


def service_endpoint(
    service: ServiceSettings,
    encryption: EncryptionSettings,
    *,
    path: str,
    label: str,
    too_large_advice: str = "",
    resend_unanswered: bool = True,
    translate: StatusTranslator = error_for_status,
) -> Endpoint:
    """The endpoint `path` of the service the MEDASR_* settings name; raises ConfigError.

    Also raises InsecureTransport (a ConfigError) for http:// to a non-loopback host
    without permission, and EncryptionError for an unusable JWE key.
    """
    return Endpoint(
        url=service.effective_base_url + path,
        token=service.token,
        key=jwe_key_of(encryption),
        max_body_bytes=service.max_upload_bytes,
        label=label,
        allow_insecure_http=service.allow_insecure_http,
        too_large_advice=too_large_advice,
        resend_unanswered=resend_unanswered,
        translate=translate,
    )


def jwe_key_of(encryption: EncryptionSettings) -> jwe.JweKey | None:
    """The key to seal requests with, None when encryption is off; raises ConfigError."""
    if not encryption.enabled:
        return None
    if encryption.jwe_key is None:
        raise ConfigError("encryption is on but no key is set (MEDASR_JWE_KEY)")
    return jwe.derive_key(encryption.jwe_key.get_secret_value(), kid=encryption.jwe_kid)
