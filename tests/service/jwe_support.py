"""Shared pieces of the JWE tests: a test key string, a plaintext, base64url helpers."""

from __future__ import annotations

import base64
import json

KEY_STRING = "s3cr3t-k3y-16chr"
PLAINTEXT = b'{"text": "hi"}'
PROTECTED = "eyJhbGciOiJkaXIiLCJlbmMiOiJBMTI4Q0JDLUhTMjU2In0"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def compact(envelope: dict[str, str]) -> bytes:
    return json.dumps(envelope, separators=(",", ":")).encode()
