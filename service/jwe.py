"""The opt-in JWE envelope: `dir` + A128CBC-HS256 (RFC 7516/7518), as docs/service-contract.md says.

Requests use the flattened JSON serialization plus a top-level `kid`; responses carry
`ciphertext`, `iv`, `tag` and are authenticated either by the RFC 7518 16-byte tag or by
the vendor's 32-byte HMAC-SHA256 over the ciphertext alone (which does not cover the IV).
Every failure is an EncryptionError whose message never carries key material.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
from dataclasses import dataclass

from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from service.errors import EncryptionError

ALG = "dir"
ENC = "A128CBC-HS256"
_BLOCK_BYTES = 16
_HALF_KEY_BYTES = 16
_TAG_BYTES = 16
_LEGACY_TAG_BYTES = 32
_B64URL = re.compile(r"[A-Za-z0-9_-]*")
_FILE_PREFIX = b'{"file": "'
_FILE_SUFFIX = b'"}'


def _b64url_encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


PROTECTED = _b64url_encode(json.dumps({"alg": ALG, "enc": ENC}, separators=(",", ":")).encode())


@dataclass(frozen=True, repr=False)
class JweKey:
    """The shared key split per RFC 7518: 16-byte MAC key, 16-byte AES key, optional key id."""

    mac_key: bytes
    enc_key: bytes
    kid: str | None

    def __repr__(self) -> str:
        return f"JweKey(kid={self.kid!r}, key=<hidden>)"


def derive_key(key_string: str, *, kid: str | None = None) -> JweKey:
    """Build the key from the 16-character shared string; raises EncryptionError otherwise."""
    raw = (key_string * 2).encode("utf-8")
    if len(raw) != 2 * _HALF_KEY_BYTES:
        n = len(key_string)
        detail = f"got {n} characters" + (f" but {len(raw) // 2} UTF-8 bytes" if n == 16 else "")
        raise EncryptionError(
            f"the JWE key must be a 16-character string ({detail}); check MEDASR_JWE_KEY"
        )
    return JweKey(mac_key=raw[:_HALF_KEY_BYTES], enc_key=raw[_HALF_KEY_BYTES:], kid=kid)


def _check_lengths(*, enc_key: bytes, mac_key: bytes, iv: bytes) -> None:
    if len(enc_key) != _HALF_KEY_BYTES or len(mac_key) != _HALF_KEY_BYTES:
        raise EncryptionError("the A128CBC-HS256 MAC and AES keys must be 16 bytes each")
    if len(iv) != _BLOCK_BYTES:
        raise EncryptionError(f"the JWE iv must be 16 bytes (got {len(iv)})")


def _cbc_encrypt(*, enc_key: bytes, iv: bytes, plaintext: bytes) -> bytes:
    padder = padding.PKCS7(128).padder()
    padded = padder.update(plaintext) + padder.finalize()
    encryptor = Cipher(algorithms.AES(enc_key), modes.CBC(iv)).encryptor()
    return encryptor.update(padded) + encryptor.finalize()


def _cbc_decrypt(*, enc_key: bytes, iv: bytes, ciphertext: bytes) -> bytes:
    if not ciphertext or len(ciphertext) % _BLOCK_BYTES:
        raise EncryptionError("the JWE ciphertext is not a whole number of 16-byte blocks")
    decryptor = Cipher(algorithms.AES(enc_key), modes.CBC(iv)).decryptor()
    unpadder = padding.PKCS7(128).unpadder()
    padded = decryptor.update(ciphertext) + decryptor.finalize()
    try:
        return unpadder.update(padded) + unpadder.finalize()
    except ValueError as exc:
        raise EncryptionError("the decrypted JWE content has invalid padding") from exc


def _aead_tag(*, mac_key: bytes, iv: bytes, ciphertext: bytes, aad: bytes) -> bytes:
    mac = hmac.new(mac_key, aad + iv, hashlib.sha256)
    mac.update(ciphertext)  # fed separately so a multi-MB ciphertext is not copied
    mac.update((8 * len(aad)).to_bytes(8, "big"))
    return mac.digest()[:_TAG_BYTES]


def _legacy_tag(*, mac_key: bytes, ciphertext: bytes) -> bytes:
    # The vendor's documented response example verifies under this; it does not cover the IV.
    return hmac.digest(mac_key, ciphertext, hashlib.sha256)


def encrypt_aead(
    *, enc_key: bytes, mac_key: bytes, iv: bytes, plaintext: bytes, aad: bytes
) -> tuple[bytes, bytes]:
    """AES_CBC_HMAC_SHA2 encryption (RFC 7518 §5.2.2): (ciphertext, 16-byte tag)."""
    _check_lengths(enc_key=enc_key, mac_key=mac_key, iv=iv)
    ciphertext = _cbc_encrypt(enc_key=enc_key, iv=iv, plaintext=plaintext)
    return ciphertext, _aead_tag(mac_key=mac_key, iv=iv, ciphertext=ciphertext, aad=aad)


def decrypt_aead(
    *, enc_key: bytes, mac_key: bytes, iv: bytes, ciphertext: bytes, tag: bytes, aad: bytes
) -> bytes:
    """Verify the 16-byte tag in constant time, then decrypt; raises EncryptionError."""
    _check_lengths(enc_key=enc_key, mac_key=mac_key, iv=iv)
    expected = _aead_tag(mac_key=mac_key, iv=iv, ciphertext=ciphertext, aad=aad)
    if len(tag) != _TAG_BYTES:
        raise EncryptionError(f"the JWE authentication tag must be 16 bytes (got {len(tag)})")
    if not hmac.compare_digest(expected, tag):
        raise EncryptionError("the JWE authentication tag does not match (wrong key or altered)")
    return _cbc_decrypt(enc_key=enc_key, iv=iv, ciphertext=ciphertext)


def encrypt_request(plaintext: bytes, *, key: JweKey, iv: bytes | None = None) -> dict[str, str]:
    """Flattened JWE JSON (protected, iv, ciphertext, tag, kid) with a fresh 16-byte IV."""
    iv, aad = os.urandom(_BLOCK_BYTES) if iv is None else iv, PROTECTED.encode("ascii")
    ciphertext, tag = encrypt_aead(
        enc_key=key.enc_key, mac_key=key.mac_key, iv=iv, plaintext=plaintext, aad=aad
    )
    envelope = {"protected": PROTECTED, "iv": _b64url_encode(iv)}
    envelope |= {"ciphertext": _b64url_encode(ciphertext), "tag": _b64url_encode(tag)}
    if key.kid is not None:
        envelope["kid"] = key.kid
    return envelope


def encrypt_response(
    plaintext: bytes, *, key: JweKey, legacy_tag: bool = False, iv: bytes | None = None
) -> dict[str, str]:
    """Response envelope (ciphertext, iv, tag); legacy_tag gives the 32-byte HMAC of the CT."""
    iv = os.urandom(_BLOCK_BYTES) if iv is None else iv
    if legacy_tag:
        _check_lengths(enc_key=key.enc_key, mac_key=key.mac_key, iv=iv)
        ciphertext = _cbc_encrypt(enc_key=key.enc_key, iv=iv, plaintext=plaintext)
        tag = _legacy_tag(mac_key=key.mac_key, ciphertext=ciphertext)
    else:
        ciphertext, tag = encrypt_aead(
            enc_key=key.enc_key, mac_key=key.mac_key, iv=iv, plaintext=plaintext, aad=b""
        )
    return {
        "ciphertext": _b64url_encode(ciphertext),
        "iv": _b64url_encode(iv),
        "tag": _b64url_encode(tag),
    }


def _as_mapping(envelope: object) -> dict[str, object]:
    if isinstance(envelope, bytes | bytearray | str):
        try:
            envelope = json.loads(envelope)
        except (ValueError, RecursionError) as exc:
            raise EncryptionError("the JWE envelope is not valid JSON") from exc
    if not isinstance(envelope, dict):
        raise EncryptionError("the JWE envelope is not a JSON object")
    return envelope


def _member(envelope: dict[str, object], name: str) -> str:
    value = envelope.get(name)
    if not isinstance(value, str):
        state = "missing" if value is None else "not a string"
        raise EncryptionError(f"the JWE envelope member '{name}' is {state}")
    return value


def _b64url_decode(value: str, *, name: str) -> bytes:
    text = value.rstrip("=")  # lenient on input padding, strict on alphabet and trailing bits
    try:
        if not _B64URL.fullmatch(text):
            raise ValueError("non-base64url character")
        data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        if _b64url_encode(data) != text:
            raise ValueError("non-canonical encoding")
    except ValueError as exc:
        raise EncryptionError(f"the JWE envelope member '{name}' is not valid base64url") from exc
    return data


def _check_protected(protected: str) -> None:
    try:
        header = json.loads(_b64url_decode(protected, name="protected"))
    except (ValueError, RecursionError) as exc:
        raise EncryptionError("the JWE protected header is not valid JSON") from exc
    if not isinstance(header, dict):
        raise EncryptionError("the JWE protected header is not a JSON object")
    if header.get("alg") != ALG or header.get("enc") != ENC:
        raise EncryptionError(f"the JWE protected header must say alg '{ALG}' and enc '{ENC}'")
    if "zip" in header or "crit" in header:
        raise EncryptionError("the JWE protected header uses 'zip' or 'crit', which we refuse")


def _parts(envelope: dict[str, object]) -> tuple[bytes, bytes, bytes]:
    iv = _b64url_decode(_member(envelope, "iv"), name="iv")
    ciphertext = _b64url_decode(_member(envelope, "ciphertext"), name="ciphertext")
    return iv, ciphertext, _b64url_decode(_member(envelope, "tag"), name="tag")


def decrypt_request(envelope: object, *, key: JweKey) -> bytes:
    """Server side: check protected alg/enc, verify the tag, decrypt; raises EncryptionError."""
    body = _as_mapping(envelope)
    protected = _member(body, "protected")
    _check_protected(protected)
    if body.get("aad") is not None or body.get("encrypted_key") not in (None, ""):
        raise EncryptionError("the JWE envelope carries 'aad' or an encrypted key; not for 'dir'")
    kid = body.get("kid")
    if kid is not None and key.kid is not None and kid != key.kid:
        raise EncryptionError("the JWE envelope names a different key id than ours")
    iv, ciphertext, tag = _parts(body)
    aad = protected.encode("ascii")
    return decrypt_aead(
        enc_key=key.enc_key, mac_key=key.mac_key, iv=iv, ciphertext=ciphertext, tag=tag, aad=aad
    )


def decrypt_response(envelope: object, *, key: JweKey) -> bytes:
    """Accept a 16-byte RFC 7518 tag or a 32-byte HMAC-SHA256(CT) tag; raises EncryptionError."""
    body = _as_mapping(envelope)
    protected = body.get("protected")
    if protected is not None:
        _check_protected(_member(body, "protected"))
    iv, ciphertext, tag = _parts(body)
    if len(tag) == _LEGACY_TAG_BYTES:
        _check_lengths(enc_key=key.enc_key, mac_key=key.mac_key, iv=iv)
        if not hmac.compare_digest(_legacy_tag(mac_key=key.mac_key, ciphertext=ciphertext), tag):
            raise EncryptionError("the JWE response tag does not match (wrong key or altered)")
        return _cbc_decrypt(enc_key=key.enc_key, iv=iv, ciphertext=ciphertext)
    if len(tag) != _TAG_BYTES:
        raise EncryptionError(f"the JWE response tag must be 16 or 32 bytes (got {len(tag)})")
    aad = protected.encode("ascii") if isinstance(protected, str) else b""
    return decrypt_aead(
        enc_key=key.enc_key, mac_key=key.mac_key, iv=iv, ciphertext=ciphertext, tag=tag, aad=aad
    )


def is_encrypted_envelope(body: object) -> bool:
    """True for a dict whose ciphertext, iv and tag are strings (the vendor's shape)."""
    return isinstance(body, dict) and all(
        isinstance(body.get(name), str) for name in ("ciphertext", "iv", "tag")
    )


def file_upload_plaintext(file_bytes: bytes) -> bytes:
    """The upload plaintext `{"file": "<standard base64>"}`, byte for byte."""
    return _FILE_PREFIX + base64.b64encode(file_bytes) + _FILE_SUFFIX


def encrypted_upload_body_bytes(file_size_bytes: int, *, kid: str | None) -> int:
    """Exact bytes of the compact-JSON encrypted request body for a file of that size."""
    b64_bytes = 4 * -(-file_size_bytes // 3)
    plaintext_bytes = len(_FILE_PREFIX) + b64_bytes + len(_FILE_SUFFIX)
    ciphertext_bytes = _BLOCK_BYTES * (plaintext_bytes // _BLOCK_BYTES + 1)
    skeleton: dict[str, str] = {"protected": PROTECTED, "iv": "", "ciphertext": "", "tag": ""}
    if kid is not None:
        skeleton["kid"] = kid
    fixed = len(json.dumps(skeleton, separators=(",", ":")).encode("utf-8"))
    iv_and_tag = 2 * len(_b64url_encode(bytes(_BLOCK_BYTES)))
    return fixed + iv_and_tag + -(-4 * ciphertext_bytes // 3)


def max_file_bytes_for_body(max_body_bytes: int, *, kid: str | None) -> int:
    """Largest file (bytes) whose encrypted body fits max_body_bytes; raises EncryptionError."""
    if encrypted_upload_body_bytes(0, kid=kid) > max_body_bytes:
        raise EncryptionError(
            f"an upload cap of {max_body_bytes} bytes cannot hold any encrypted file"
        )
    low, high = 0, max_body_bytes  # invariant: low fits, high + 1 does not
    while low < high:
        mid = (low + high + 1) // 2
        if encrypted_upload_body_bytes(mid, kid=kid) <= max_body_bytes:
            low = mid
        else:
            high = mid - 1
    return low
