"""The JWE envelope: Wycheproof vectors, jwcrypto interop, tampering, shapes and sizes."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from jwcrypto import jwe as jose_jwe
from jwcrypto import jwk

from service.errors import EncryptionError
from service.jwe import (
    JweKey,
    decrypt_aead,
    decrypt_request,
    decrypt_response,
    derive_key,
    encrypt_aead,
    encrypt_request,
    encrypt_response,
    encrypted_upload_body_bytes,
    file_upload_plaintext,
    is_encrypted_envelope,
    max_file_bytes_for_body,
)

KEY_STRING = "s3cr3t-k3y-16chr"
PLAINTEXT = b'{"text": "hi"}'
PROTECTED = "eyJhbGciOiJkaXIiLCJlbmMiOiJBMTI4Q0JDLUhTMjU2In0"
VECTORS_NAME = "wycheproof_a128cbc_hs256_test.json"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def compact(envelope: dict[str, str]) -> bytes:
    return json.dumps(envelope, separators=(",", ":")).encode()


@pytest.fixture
def key() -> JweKey:
    return derive_key(KEY_STRING, kid="key-1")


@pytest.fixture
def peer_key() -> jwk.JWK:
    return jwk.JWK(kty="oct", k=b64url((KEY_STRING * 2).encode()))


# --- Project Wycheproof ------------------------------------------------------------------


def vectors_path() -> Path:
    env_dir = os.environ.get("MEDASR_TEST_VECTORS_DIR")
    base = Path(env_dir) if env_dir else Path(__file__).resolve().parents[3] / "shared" / "vectors"
    return base / VECTORS_NAME


def wycheproof_cases() -> list[Any]:
    path = vectors_path()
    if not path.is_file():  # fail, never skip: an empty parameter set would be skipped
        return [pytest.param(None, id="vectors-missing")]
    suite = json.loads(path.read_text())
    return [
        pytest.param(case, id=f"tc{case['tcId']}-{case['result']}")
        for group in suite["testGroups"]
        for case in group["tests"]
    ]


WYCHEPROOF = wycheproof_cases()


def test_wycheproof_suite_is_complete() -> None:
    cases = [param.values[0] for param in WYCHEPROOF]
    assert None not in cases, f"missing {vectors_path()} (set MEDASR_TEST_VECTORS_DIR)"
    assert len(cases) == 94
    assert sum(case["result"] == "invalid" for case in cases) == 27


@pytest.mark.parametrize("case", WYCHEPROOF)
def test_wycheproof_vector(case: dict[str, Any] | None) -> None:
    if case is None:
        pytest.fail(f"Wycheproof vectors not found at {vectors_path()}")
    raw = bytes.fromhex(case["key"])
    keys = {"mac_key": raw[:16], "enc_key": raw[16:]}
    iv, aad, msg = (bytes.fromhex(case[name]) for name in ("iv", "aad", "msg"))
    ct, tag = bytes.fromhex(case["ct"]), bytes.fromhex(case["tag"])
    opened: bytes | None
    try:
        opened = decrypt_aead(**keys, iv=iv, ciphertext=ct, tag=tag, aad=aad)
    except EncryptionError:
        opened = None
    if case["result"] == "valid":
        assert opened == msg
        assert encrypt_aead(**keys, iv=iv, plaintext=msg, aad=aad) == (ct, tag)
    elif case["result"] == "invalid":
        assert opened is None
    else:  # "acceptable": either answer, but a decryption must be the message
        assert opened in (None, msg)


# --- jwcrypto interop --------------------------------------------------------------------


@pytest.mark.parametrize("kid", [None, "key-1"], ids=["no-kid", "top-level-kid"])
def test_jwcrypto_decrypts_our_request(kid: str | None, peer_key: jwk.JWK) -> None:
    envelope = encrypt_request(PLAINTEXT, key=derive_key(KEY_STRING, kid=kid))
    assert ("kid" in envelope) is (kid is not None)
    token = jose_jwe.JWE()
    token.deserialize(compact(envelope).decode(), key=peer_key)
    assert token.payload == PLAINTEXT


@pytest.mark.parametrize(
    "decrypt", [decrypt_request, decrypt_response], ids=["request", "response"]
)
def test_we_decrypt_jwcrypto_output(
    decrypt: Callable[..., bytes], key: JweKey, peer_key: jwk.JWK
) -> None:
    # jwcrypto writes its protected header with spaces: the AAD must be the string as sent.
    token = jose_jwe.JWE(PLAINTEXT, protected=json.dumps({"alg": "dir", "enc": "A128CBC-HS256"}))
    token.add_recipient(peer_key)
    envelope = json.loads(token.serialize())
    assert envelope["protected"] != PROTECTED
    assert decrypt(envelope, key=key) == PLAINTEXT


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


# --- key -----------------------------------------------------------------------------------


def test_derive_key_splits_the_doubled_string() -> None:
    key = derive_key(KEY_STRING, kid="k")
    raw = (KEY_STRING * 2).encode()
    assert (key.mac_key, key.enc_key, key.kid) == (raw[:16], raw[16:], "k")


@pytest.mark.parametrize(
    ("key_string", "message"),
    [
        pytest.param("", "(got 0 characters)", id="empty"),
        pytest.param("short", "(got 5 characters)", id="five-chars"),
        pytest.param("x" * 15, "(got 15 characters)", id="15-chars"),
        pytest.param("x" * 17, "(got 17 characters)", id="17-chars"),
        pytest.param("é" * 16, "(got 16 characters but 32 UTF-8 bytes)", id="16-non-ascii"),
    ],
)
def test_wrong_length_key_is_refused(key_string: str, message: str) -> None:
    with pytest.raises(EncryptionError) as caught:
        derive_key(key_string)
    text = str(caught.value)
    assert text.startswith("the JWE key must be a 16-character string ")
    assert message in text
    assert text.endswith("; check MEDASR_JWE_KEY")
    if key_string:
        assert key_string not in text


def test_wrong_length_key_message_is_exact() -> None:
    with pytest.raises(EncryptionError) as caught:
        derive_key("short")
    assert str(caught.value) == (
        "the JWE key must be a 16-character string (got 5 characters); check MEDASR_JWE_KEY"
    )


def test_key_repr_hides_the_key() -> None:
    key = derive_key(KEY_STRING, kid="key-1")
    for text in (repr(key), str(key), f"{key}", repr([key])):
        assert KEY_STRING not in text
        assert repr(key.mac_key) not in text
        assert key.mac_key.hex() not in text
        assert "key-1" in text


# --- file upload plaintext and sizes --------------------------------------------------------


@pytest.mark.parametrize(
    ("file_bytes", "expected"),
    [
        pytest.param(b"", b'{"file": ""}', id="empty"),
        pytest.param(b"\xfb\xff\xbf", b'{"file": "+/+/"}', id="plus-slash"),
        pytest.param(b"\xfb\xff", b'{"file": "+/8="}', id="one-pad"),
        pytest.param(b"\xff", b'{"file": "/w=="}', id="two-pad"),
    ],
)
def test_file_upload_plaintext_is_standard_base64(file_bytes: bytes, expected: bytes) -> None:
    plaintext = file_upload_plaintext(file_bytes)
    assert plaintext == expected
    assert plaintext == json.dumps({"file": base64.b64encode(file_bytes).decode()}).encode()


@pytest.mark.parametrize("kid", [None, "key-1", 'clé "ü"\\'], ids=["no-kid", "kid", "kid-escaped"])
@pytest.mark.parametrize("size", [0, 1, 2, 3, 4, 11, 12, 13, 47, 48, 49, 1000, 65_537])
def test_encrypted_upload_body_bytes_is_exact(size: int, kid: str | None) -> None:
    key = derive_key(KEY_STRING, kid=kid)
    body = compact(encrypt_request(file_upload_plaintext(os.urandom(size)), key=key))
    assert encrypted_upload_body_bytes(size, kid=kid) == len(body)


@pytest.mark.parametrize("kid", [None, "key-1"], ids=["no-kid", "kid"])
@pytest.mark.parametrize("max_body_bytes", [500, 4096, 100_000, 5_000_000])
def test_max_file_bytes_for_body_fits_and_is_largest(max_body_bytes: int, kid: str | None) -> None:
    file_bytes = max_file_bytes_for_body(max_body_bytes, kid=kid)
    key = derive_key(KEY_STRING, kid=kid)
    body = compact(encrypt_request(file_upload_plaintext(os.urandom(file_bytes)), key=key))
    assert len(body) <= max_body_bytes
    assert encrypted_upload_body_bytes(file_bytes + 1, kid=kid) > max_body_bytes
    grown = compact(encrypt_request(file_upload_plaintext(os.urandom(file_bytes + 48)), key=key))
    assert len(grown) > max_body_bytes
    if max_body_bytes >= 100_000:
        assert 1.75 < max_body_bytes / file_bytes < 1.85


def test_max_file_bytes_for_a_cap_too_small_is_refused() -> None:
    with pytest.raises(EncryptionError, match="cannot hold any encrypted file"):
        max_file_bytes_for_body(100, kid=None)
