"""Errors of talking to the service; translated from httpx once (client.py via status.py).

    MedasrError (config/errors.py)
    ├── TransientError
    │   └── ServiceUnavailable         429, 500, 502-504, timeouts, connection errors
    │       └── Throttled              429; `retry_after_s` from the server
    └── TerminalError
        ├── PayloadTooLarge            413, or refused by us before sending
        ├── RequestRejected            any other 4xx (and an unsupported language)
        ├── InvalidResponse            200 without JSON or without a `text` string
        │   └── AnswerTooLarge         a 2xx whose body runs past MEDASR_SERVICE__MAX_ANSWER_BYTES
        ├── EncryptionError            bad key, bad envelope, tag mismatch
        └── RunStop (config/errors.py) the whole run stops, items are left pending
            ├── CredentialsRejected    401/403
            └── ConfigError (config/errors.py)
                ├── InsecureTransport  http:// to a non-loopback host without permission
                ├── ServiceRedirected  a 3xx: the base URL names a door that moved
                └── TlsNotVerified     the server's certificate did not verify (CA bundle)

`status` is the HTTP status when one was received. Messages never carry the token,
the key, or any transcript text; response bodies are quoted only when short and only
from error responses.
"""

from __future__ import annotations

from config.errors import ConfigError, RunStop, TerminalError, TransientError


class ServiceError(Exception):
    """Mixin carrying the HTTP status of a service failure, when there was one."""

    status: int | None = None


class ServiceUnavailable(TransientError, ServiceError):
    """The service could not answer now (5xx, timeout, connection); retry later."""

    kind = "service_unavailable"

    def __init__(
        self, message: str, *, status: int | None = None, retry_after_s: float | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after_s = retry_after_s


class Throttled(ServiceUnavailable):
    """429: the service asks us to slow down, for `retry_after_s` seconds if it said."""

    kind = "throttled"


class CredentialsRejected(RunStop, ServiceError):
    """401/403: the token is missing, wrong or expired; fix MEDASR_TOKEN."""

    kind = "credentials_rejected"

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class PayloadTooLarge(TerminalError, ServiceError):
    """413, or a body we refused to send because it exceeds the upload cap."""

    kind = "payload_too_large"

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class RequestRejected(TerminalError, ServiceError):
    """Another 4xx: the service refuses this request as it is."""

    kind = "request_rejected"

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class InvalidResponse(TerminalError, ServiceError):
    """A 2xx whose body is not the JSON object with a `text` string we expect."""

    kind = "invalid_response"

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class AnswerTooLarge(InvalidResponse):
    """A 2xx whose body runs past the answer cap: reading stopped there.

    The receiver accepted the request, so a document so answered may be filed (in doubt).
    """

    kind = "answer_too_large"


class InsecureTransport(ConfigError):
    """Refused to send patient audio over plain http:// to a non-loopback host."""

    kind = "insecure_transport"


class ServiceRedirected(ConfigError, ServiceError):
    """A 3xx: every request to this URL would be redirected (never followed); fix the URL."""

    kind = "service_redirected"

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class TlsNotVerified(ConfigError, ServiceError):
    """The service's TLS certificate did not verify; retrying cannot help, MEDASR_CA_BUNDLE can."""

    kind = "tls_not_verified"


class EncryptionError(TerminalError):
    """The JWE key, a request envelope or a response envelope is unusable."""

    kind = "encryption_error"
