"""Transcript versions: what names one transcript of one recording's content (no SQL).

A version changes when the recording's content (sha256 of the audio), the language or
the text changes; the delivery ledger delivers each version once per target.
"""

from __future__ import annotations

import hashlib

from storage.records import ItemRecord


def transcript_version(*, content_sha256: str | None, language: str, text: str) -> str:
    """sha256 (hex) naming one transcript of one recording's content in one language."""
    text_sha256 = hashlib.sha256(text.encode("utf-8")).hexdigest()
    named = f"{content_sha256 or ''}\n{language}\n{text_sha256}"
    return hashlib.sha256(named.encode("utf-8")).hexdigest()


def item_version(item: ItemRecord) -> str:
    """The transcript version of a finished item as it is stored now."""
    return transcript_version(
        content_sha256=item.sha256, language=item.language, text=item.text or ""
    )
