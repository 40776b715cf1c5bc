"""Settings checks that need the service wing, run before any work starts (exit code 2).

load_settings() already checks types, bounds and the JWE key length. What it cannot see
without the transport rules and the key derivation lives here: a clear-text URL to a
remote host (or a name that does not resolve), a CA bundle that does not load, a token
that cannot be an HTTP header value, a key that the envelope would refuse. The
client would refuse the same things, but only once the first file reaches it.
"""

from __future__ import annotations

from config.errors import ConfigError
from config.settings import EncryptionSettings, ServiceSettings
from service import jwe
from service.client import max_wav_bytes_for
from service.contract import TRANSCRIBE_PATH
from service.errors import EncryptionError
from service.status import bearer_token, check_transport, tls_verify


def check_service_config(*, service: ServiceSettings, encryption: EncryptionSettings) -> None:
    """Refuse settings the client would refuse; raises ConfigError, one line naming MEDASR_*."""
    # InsecureTransport is a ConfigError naming MEDASR_BASE_URL and MEDASR_ALLOW_INSECURE_HTTP.
    check_transport(
        service.effective_base_url + TRANSCRIBE_PATH,
        allow_insecure_http=service.allow_insecure_http,
    )
    tls_verify(service.ca_bundle)  # raises ConfigError naming MEDASR_CA_BUNDLE
    if service.token is not None:  # a missing token stops the run later, as credentials
        bearer_token(service.token)  # raises ConfigError naming MEDASR_TOKEN
    _check_encryption(service=service, encryption=encryption)


def _check_encryption(*, service: ServiceSettings, encryption: EncryptionSettings) -> None:
    if encryption.jwe_key is not None:
        try:
            jwe.derive_key(encryption.jwe_key.get_secret_value(), kid=encryption.jwe_kid)
        except EncryptionError as exc:
            raise ConfigError(str(exc)) from exc  # names MEDASR_JWE_KEY, never the key
    if not encryption.enabled:
        return
    if encryption.jwe_key is None:
        raise ConfigError("encryption is on but no key is set (MEDASR_JWE_KEY)")
    try:
        max_wav_bytes_for(service, encryption)
    except EncryptionError as exc:
        raise ConfigError(f"MEDASR_MAX_UPLOAD_BYTES: {exc}") from exc
