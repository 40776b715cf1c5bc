"""Reading an accepted answer: JSON, opened first when it came as a JWE envelope."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import httpx

from service import jwe
from service.errors import InvalidResponse

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # after json.loads, pairs are one character


def json_object_of(
    response: httpx.Response, *, key: jwe.JweKey | None, answered: str, advice: str = ""
) -> dict[str, Any]:
    """The answer's JSON object (decrypted if sealed), as a store can keep it (`storable`);
    raises InvalidResponse, EncryptionError.

    Messages read "{answered} (HTTP 200) but its answer is not JSON (12 bytes){advice}".
    """
    status = response.status_code
    said = f"{answered} (HTTP {status}) but its answer"
    try:
        body = _read_json(response, key=key, said=said, advice=advice)
    except RecursionError as exc:  # storable's walk: parsed, but deeper than the stack
        raise InvalidResponse(f"{said} is JSON nested too deeply{advice}", status=status) from exc
    if not isinstance(body, dict):
        raise InvalidResponse(f"{said} is JSON that is not an object{advice}", status=status)
    return body


def json_or_none(response: httpx.Response, *, otherwise: Any = None) -> Any:
    """The body's JSON, or `otherwise` for a body that is none: empty, not JSON, or nested
    past the parser's depth (RecursionError, which a `ValueError` handler lets through)."""
    try:
        return response.json() if response.content else otherwise
    except (ValueError, RecursionError):
        return otherwise


_NOT_JSON = object()


def _read_json(response: httpx.Response, *, key: jwe.JweKey | None, said: str, advice: str) -> Any:
    status = response.status_code
    body = json_or_none(response, otherwise=_NOT_JSON)
    if body is _NOT_JSON:
        raise InvalidResponse(
            f"{said} is not JSON ({len(response.content)} bytes){advice}", status=status
        )
    if jwe.is_encrypted_envelope(body):
        body = _opened(body, key=key, said=said, status=status)
    return storable(body)


def storable(value: Any) -> Any:
    """`value` (JSON) with NULs dropped from its strings and keys, lone surrogates made U+FFFD,
    NaN and infinities made null.

    Python's JSON reader takes all of them (`\\u0000`, `\\ud800`, `NaN`), a store cannot
    keep them: PostgreSQL refuses NUL in text and JSON columns and NaN in JSON, and no UTF-8
    string holds a lone surrogate. Kept, a paid answer could not be stored.
    """
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value.replace("\x00", ""))
    if isinstance(value, list):
        return [storable(item) for item in value]
    if isinstance(value, dict):
        return {storable(key): storable(item) for key, item in value.items()}
    return value


def _opened(envelope: object, *, key: jwe.JweKey | None, said: str, status: int) -> object:
    if key is None:
        raise InvalidResponse(
            "the service sent an encrypted response but encryption is off; "
            "set MEDASR_ENCRYPT=true and MEDASR_JWE_KEY",
            status=status,
        )
    plaintext = jwe.decrypt_response(envelope, key=key)
    try:
        return json.loads(plaintext)
    except ValueError as exc:
        raise InvalidResponse(
            f"{said} is an encrypted body that is not JSON", status=status
        ) from exc
