"""The JWE envelope against outside references: Wycheproof, jwcrypto; key derivation; sizes."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
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
    encrypted_upload_body_bytes,
    file_upload_plaintext,
    max_file_bytes_for_body,
)
from tests.service.jwe_support import KEY_STRING, PLAINTEXT, PROTECTED, b64url, compact

VECTORS_NAME = "wycheproof_a128cbc_hs256_test.json"
# A copy of Project Wycheproof's file (Apache-2.0, vectors/WYCHEPROOF-LICENSE) lives beside
# this test so the suite runs from any checkout; MEDASR_TEST_VECTORS_DIR points elsewhere.
VECTORS_DIR = Path(__file__).resolve().parent / "vectors"


@pytest.fixture
def key() -> JweKey:
    return derive_key(KEY_STRING, kid="key-1")


@pytest.fixture
def peer_key() -> jwk.JWK:
    return jwk.JWK(kty="oct", k=b64url((KEY_STRING * 2).encode()))


# --- Project Wycheproof ------------------------------------------------------------------


def vectors_path() -> Path:
    env_dir = os.environ.get("MEDASR_TEST_VECTORS_DIR")
    return (Path(env_dir) if env_dir else VECTORS_DIR) / VECTORS_NAME


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
