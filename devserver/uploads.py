"""Getting the audio out of a request body: multipart field `file`, or a JWE envelope."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import AsyncGenerator

from starlette.datastructures import Headers, UploadFile
from starlette.formparsers import MultiPartException, MultiPartParser

from service import jwe
from service.contract import MESSAGE_NO_FILE, UPLOAD_FIELD
from service.errors import EncryptionError


class Refusal(Exception):
    """Ends a request early with an HTTP status and a `{"message": ...}` body."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class _InMemoryMultiPartParser(MultiPartParser):
    # 0 = never spill to a temp file: the body is already capped and in memory.
    spool_max_size = 0


async def _once(body: bytes) -> AsyncGenerator[bytes, None]:
    yield body


async def audio_from_multipart(headers: Headers, body: bytes) -> tuple[bytes, str | None]:
    """(file bytes, filename) of the `file` part; raises Refusal 500 without one, 400 if bad."""
    if not headers.get("content-type", "").lower().startswith("multipart/form-data"):
        raise Refusal(500, MESSAGE_NO_FILE)
    parser = _InMemoryMultiPartParser(headers, _once(body), max_files=8, max_fields=32)
    try:
        form = await parser.parse()
    except MultiPartException as exc:
        raise Refusal(400, f"the multipart body is malformed: {exc.message}") from exc
    try:
        upload = form.get(UPLOAD_FIELD)
        if not isinstance(upload, UploadFile):
            raise Refusal(500, MESSAGE_NO_FILE)
        return await upload.read(), upload.filename
    finally:
        await form.close()


def audio_from_envelope(body: bytes, *, key: jwe.JweKey | None) -> bytes:
    """The file bytes inside an encrypted upload; raises Refusal 400 (bad) or 500 (no file)."""
    if key is None:
        raise Refusal(400, "this devserver has no JWE key; start it with --jwe-key")
    try:
        plaintext = jwe.decrypt_request(body, key=key)
    except EncryptionError as exc:
        raise Refusal(400, f"the encrypted request was refused: {exc}") from exc
    try:
        document = json.loads(plaintext)
    except ValueError as exc:
        raise Refusal(400, "the decrypted request is not JSON") from exc
    encoded = document.get(UPLOAD_FIELD) if isinstance(document, dict) else None
    if not isinstance(encoded, str):
        raise Refusal(500, MESSAGE_NO_FILE)
    try:
        return base64.b64decode(encoded, validate=True)
    except binascii.Error as exc:
        raise Refusal(400, "the decrypted 'file' member is not standard base64") from exc
