"""Bearer tokens of the devserver: one static token, or minted HS256 JWTs with an expiry."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from enum import Enum

_ISSUER = "medasr-devserver"


class TokenCheck(Enum):
    """What the Authorization header amounted to."""

    ACCEPTED = "accepted"
    MISSING = "missing"  # no header at all: 401
    FORBIDDEN = "forbidden"  # malformed, wrong or expired: 403


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class TokenAuthority:
    """Issues and checks tokens; a static token, when given, is the only one accepted."""

    def __init__(
        self, *, static_token: str | None, ttl_s: float, secret: bytes | None = None
    ) -> None:
        self._static = static_token
        self._secret = secret if secret is not None else secrets.token_bytes(32)
        self._token = static_token if static_token is not None else self.mint(ttl_s=ttl_s)

    @property
    def token(self) -> str:
        """The token a client should send (the static one, or the one minted at start)."""
        return self._token

    @property
    def minted(self) -> bool:
        """True when the server made its own token (it is a throwaway and may be printed)."""
        return self._static is None

    def mint(self, *, ttl_s: float, now_s: float | None = None) -> str:
        """A JWT (HS256) signed with this server's secret, valid for ttl_s seconds."""
        issued = time.time() if now_s is None else now_s
        header = _b64url(b'{"alg":"HS256","typ":"JWT"}')
        claims = {"iss": _ISSUER, "sub": "dev", "iat": int(issued), "exp": issued + ttl_s}
        payload = _b64url(json.dumps(claims, separators=(",", ":")).encode())
        signature = hmac.digest(self._secret, f"{header}.{payload}".encode(), hashlib.sha256)
        return f"{header}.{payload}.{_b64url(signature)}"

    def check(self, authorization: str | None, *, now_s: float | None = None) -> TokenCheck:
        """Judge an Authorization header value (None when the header is absent)."""
        if authorization is None:
            return TokenCheck.MISSING
        scheme, _, token = authorization.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return TokenCheck.FORBIDDEN
        if self._static is not None:
            same = hmac.compare_digest(token.encode(), self._static.encode())
            return TokenCheck.ACCEPTED if same else TokenCheck.FORBIDDEN
        valid = self._verify(token, now_s=time.time() if now_s is None else now_s)
        return TokenCheck.ACCEPTED if valid else TokenCheck.FORBIDDEN

    def _verify(self, token: str, *, now_s: float) -> bool:
        parts = token.split(".")
        if len(parts) != 3:
            return False
        header, payload, signature = parts
        expected = hmac.digest(self._secret, f"{header}.{payload}".encode(), hashlib.sha256)
        try:
            if not hmac.compare_digest(_b64url_decode(signature), expected):
                return False
            claims = json.loads(_b64url_decode(payload))
        except ValueError:
            return False
        expiry = claims.get("exp") if isinstance(claims, dict) else None
        return isinstance(expiry, int | float) and now_s < expiry
