"""The JWE envelope itself: shapes, round trips, every bit flip, malformed members."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
from collections.abc import Callable, Iterator

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from service.errors import EncryptionError
from service.jwe import (
    JweKey,
    decrypt_request,
    decrypt_response,
    derive_key,
    encrypt_request,
    encrypt_response,
    is_encrypted_envelope,
)
from tests.service.jwe_support import (
    KEY_STRING,
    PLAINTEXT,
    PROTECTED,
    b64url,
    compact,
    unb64url,
)


@pytest.fixture
def key() -> JweKey:
    return derive_key(KEY_STRING, kid="key-1")


# --- shapes and round trips --------------------------------------------------------------


def test_request_envelope_shape(key: JweKey) -> None:
    first, second = (encrypt_request(PLAINTEXT, key=key) for _ in range(2))
    assert list(first) == ["protected", "iv", "ciphertext", "tag", "kid"]
    assert first["protected"] == PROTECTED
    assert unb64url(PROTECTED) == b'{"alg":"dir","enc":"A128CBC-HS256"}'
    assert first["kid"] == "key-1"
    assert len(unb64url(first["iv"])) == 16
    assert len(unb64url(first["tag"])) == 16
    assert first["iv"] != second["iv"], "the IV must be fresh per request"
    assert not any("=" in value for value in first.values())
    assert decrypt_request(first, key=key) == PLAINTEXT


def test_request_without_kid_has_no_kid_member() -> None:
    envelope = encrypt_request(PLAINTEXT, key=derive_key(KEY_STRING))
    assert "kid" not in envelope


@pytest.mark.parametrize("legacy_tag", [False, True], ids=["tag16-empty-aad", "tag32-legacy"])
def test_response_round_trip(legacy_tag: bool, key: JweKey) -> None:
    envelope = encrypt_response(PLAINTEXT, key=key, legacy_tag=legacy_tag)
    assert list(envelope) == ["ciphertext", "iv", "tag"]
    tag = unb64url(envelope["tag"])
    assert len(tag) == (32 if legacy_tag else 16)
    if legacy_tag:
        mac = hmac.digest(key.mac_key, unb64url(envelope["ciphertext"]), hashlib.sha256)
        assert tag == mac
    assert decrypt_response(envelope, key=key) == PLAINTEXT
    assert decrypt_response(json.dumps(envelope), key=key) == PLAINTEXT
    assert decrypt_response(compact(envelope), key=key) == PLAINTEXT


def test_response_with_protected_uses_it_as_aad(key: JweKey) -> None:
    envelope = encrypt_request(PLAINTEXT, key=key)
    assert decrypt_response(envelope, key=key) == PLAINTEXT
    del envelope["protected"]  # now the tag was computed over an AAD we no longer see
    with pytest.raises(EncryptionError, match="tag does not match"):
        decrypt_response(envelope, key=key)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param({"ciphertext": "a", "iv": "b", "tag": "c"}, True, id="response-shape"),
        pytest.param({"protected": "p", "ciphertext": "a", "iv": "b", "tag": "c"}, True, id="req"),
        pytest.param({"text": "hello"}, False, id="plain-result"),
        pytest.param({"ciphertext": "a", "iv": "b"}, False, id="no-tag"),
        pytest.param({"ciphertext": 1, "iv": "b", "tag": "c"}, False, id="number-member"),
        pytest.param('{"ciphertext":"a","iv":"b","tag":"c"}', False, id="json-text"),
        pytest.param(None, False, id="none"),
    ],
)
def test_is_encrypted_envelope(body: object, expected: bool) -> None:
    assert is_encrypted_envelope(body) is expected


# --- tampering ---------------------------------------------------------------------------


def flipped_envelopes(
    envelope: dict[str, str], member: str
) -> Iterator[tuple[int, dict[str, str]]]:
    data = unb64url(envelope[member])
    for bit in range(8 * len(data)):
        changed = bytearray(data)
        changed[bit // 8] ^= 1 << (bit % 8)
        yield bit, {**envelope, member: b64url(bytes(changed))}


TAMPER_CASES = [
    pytest.param("request", member, id=f"request-{member}")
    for member in ("protected", "iv", "ciphertext", "tag")
] + [
    pytest.param("response", member, id=f"response-{member}")
    for member in ("iv", "ciphertext", "tag")
] + [
    # The legacy 32-byte tag covers the ciphertext only (the vendor's scheme), not the IV.
    pytest.param("legacy", member, id=f"legacy-{member}")
    for member in ("ciphertext", "tag")
]  # fmt: skip


@pytest.mark.parametrize(("kind", "member"), TAMPER_CASES)
def test_every_single_bit_flip_is_rejected(kind: str, member: str, key: JweKey) -> None:
    if kind == "request":
        envelope, decrypt = encrypt_request(PLAINTEXT, key=key), decrypt_request
    else:
        envelope = encrypt_response(PLAINTEXT, key=key, legacy_tag=kind == "legacy")
        decrypt = decrypt_response
    assert decrypt(envelope, key=key) == PLAINTEXT
    accepted, flips = [], 0
    for bit, tampered in flipped_envelopes(envelope, member):
        flips += 1
        try:
            decrypt(tampered, key=key)
        except EncryptionError:
            continue
        accepted.append(bit)
    assert flips >= 128
    assert accepted == [], f"flipped bits of {member} that were accepted: {accepted}"


# --- malformed envelopes -----------------------------------------------------------------

Mutation = Callable[[dict[str, str]], object]


def with_members(**members: str | None) -> Mutation:
    def mutate(envelope: dict[str, str]) -> object:
        changed: dict[str, object] = {**envelope, **members}
        return {name: value for name, value in changed.items() if value is not None}

    return mutate


def header(**fields: str) -> str:
    return b64url(json.dumps(fields).encode())


BAD_RESPONSES = [
    pytest.param(with_members(tag=b64url(bytes(20))), "16 or 32 bytes", id="tag-20-bytes"),
    pytest.param(lambda e: {**e, "tag": e["tag"][:-2]}, "16 or 32 bytes", id="tag-truncated"),
    pytest.param(with_members(tag=""), "16 or 32 bytes", id="tag-empty"),
    pytest.param(with_members(tag=b64url(bytes(16))), "does not match", id="tag-zeroed"),
    pytest.param(with_members(iv="!!not base64!!"), "'iv' is not valid base64url", id="iv-bad-b64"),
    pytest.param(
        lambda e: {**e, "ciphertext": base64.b64encode(b"\xfb\xff" * 24).decode()},
        "'ciphertext' is not valid base64url",
        id="ciphertext-standard-alphabet",
    ),
    pytest.param(with_members(iv=b64url(bytes(12))), "iv must be 16 bytes", id="iv-12-bytes"),
    pytest.param(lambda e: b"this is not json", "not valid JSON", id="non-json-bytes"),
    pytest.param(lambda e: "{", "not valid JSON", id="truncated-json-text"),
    pytest.param(lambda e: ["ciphertext"], "not a JSON object", id="json-array"),
    pytest.param(lambda e: None, "not a JSON object", id="none"),
    pytest.param(with_members(tag=None), "'tag' is missing", id="missing-tag"),
    pytest.param(with_members(iv=None), "'iv' is missing", id="missing-iv"),
    pytest.param(with_members(ciphertext=None), "'ciphertext' is missing", id="missing-ct"),
    pytest.param(lambda e: {**e, "tag": 7}, "'tag' is not a string", id="tag-not-string"),
    pytest.param(
        with_members(protected=header(alg="dir", enc="A256GCM")), "must say alg", id="wrong-enc"
    ),
]


@pytest.mark.parametrize(("mutate", "message"), BAD_RESPONSES)
def test_bad_response_envelope_is_refused(mutate: Mutation, message: str, key: JweKey) -> None:
    envelope = encrypt_response(PLAINTEXT, key=key)
    with pytest.raises(EncryptionError, match=message) as caught:
        decrypt_response(mutate(envelope), key=key)
    assert_readable(caught.value)


BAD_REQUESTS = [
    pytest.param(with_members(protected=None), "'protected' is missing", id="missing-protected"),
    pytest.param(
        with_members(protected=header(alg="RSA-OAEP", enc="A128CBC-HS256")),
        "must say alg 'dir'",
        id="wrong-alg",
    ),
    pytest.param(
        with_members(protected=header(alg="dir", enc="A256CBC-HS512")), "must say", id="wrong-enc"
    ),
    pytest.param(
        with_members(protected=header(alg="dir", enc="A128CBC-HS256", zip="DEF")),
        "'zip' or 'crit'",
        id="zip-header",
    ),
    pytest.param(
        with_members(protected=b64url(b"not json")), "header is not valid JSON", id="header-junk"
    ),
    pytest.param(
        with_members(protected=b64url(b'["dir"]')), "header is not a JSON object", id="hdr-array"
    ),
    pytest.param(with_members(tag=b64url(bytes(32))), "must be 16 bytes", id="tag-32-bytes"),
    pytest.param(with_members(kid="another-key"), "different key id", id="kid-mismatch"),
    pytest.param(with_members(aad="eHh4"), "'aad'", id="aad-member"),
]


@pytest.mark.parametrize(("mutate", "message"), BAD_REQUESTS)
def test_bad_request_envelope_is_refused(mutate: Mutation, message: str, key: JweKey) -> None:
    envelope = encrypt_request(PLAINTEXT, key=key)
    with pytest.raises(EncryptionError, match=message) as caught:
        decrypt_request(mutate(envelope), key=key)
    assert_readable(caught.value)


def assert_readable(error: EncryptionError) -> None:
    text = str(error)
    assert text.startswith("the ") or text.startswith("an ")
    assert KEY_STRING not in text
    assert KEY_STRING not in repr(error)
    assert error.kind == "encryption_error"
    assert error.transient is False


def test_wrong_key_is_refused(key: JweKey) -> None:
    envelope = encrypt_request(PLAINTEXT, key=key)
    with pytest.raises(EncryptionError, match="tag does not match"):
        decrypt_request(envelope, key=derive_key("another-16-chars", kid="key-1"))


def cbc_without_padding(key: JweKey, iv: bytes, padded: bytes) -> bytes:
    encryptor = Cipher(algorithms.AES(key.enc_key), modes.CBC(iv)).encryptor()
    return encryptor.update(padded) + encryptor.finalize()


@pytest.mark.parametrize("legacy_tag", [False, True], ids=["tag16", "tag32"])
def test_authentic_but_badly_padded_content_is_refused(legacy_tag: bool, key: JweKey) -> None:
    iv = bytes(range(16))
    ciphertext = cbc_without_padding(key, iv, b"x" * 16)  # last byte 'x' is no PKCS7 padding
    if legacy_tag:
        tag = hmac.digest(key.mac_key, ciphertext, hashlib.sha256)
    else:
        mac = hmac.new(key.mac_key, iv + ciphertext + bytes(8), hashlib.sha256)
        tag = mac.digest()[:16]
    envelope = {"ciphertext": b64url(ciphertext), "iv": b64url(iv), "tag": b64url(tag)}
    with pytest.raises(EncryptionError, match="invalid padding"):
        decrypt_response(envelope, key=key)


def test_tag_is_checked_before_decrypting(key: JweKey) -> None:
    # Garbage that would also fail unpadding must be reported as a tag failure.
    envelope = {"ciphertext": b64url(os.urandom(32)), "iv": b64url(bytes(16))}
    with pytest.raises(EncryptionError, match="tag does not match"):
        decrypt_response({**envelope, "tag": b64url(os.urandom(32))}, key=key)
    with pytest.raises(EncryptionError, match="tag does not match"):
        decrypt_response({**envelope, "tag": b64url(os.urandom(16))}, key=key)


def test_encrypting_with_a_bad_iv_is_refused(key: JweKey) -> None:
    with pytest.raises(EncryptionError, match="iv must be 16 bytes"):
        encrypt_request(PLAINTEXT, key=key, iv=bytes(8))
