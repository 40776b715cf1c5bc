"""A recording's language checked before anything is sent: one the service takes.

The manifest's `language` cell (tasks/discovery/languages.py) is kept as written; a
value the service does not take fails that recording alone (`metadata_invalid`), with
a sentence naming its manifest row and the value, and no request is made.
"""

from __future__ import annotations

from collections.abc import Sequence

from service.contract import LANGUAGES, is_supported_language
from storage.records import ItemRecord
from tasks.discovery.languages import LANGUAGE_COLUMN
from tasks.discovery.recording_names import one_line, recording_name
from tasks.errors import LanguageInvalid


def require_known_language(item: ItemRecord, *, roots: Sequence[str]) -> None:
    """Raise LanguageInvalid unless the recording's language is one the service takes."""
    if is_supported_language(item.language):
        return
    row = recording_name(item.source_uri, roots=roots)
    known = ", ".join(LANGUAGES)
    if not item.language:
        raise LanguageInvalid(
            f"no language for {row}: its manifest row has no {LANGUAGE_COLUMN!r} cell and the "
            f"run no --language; give one of: {known}"
        )
    written = (item.metadata or {}).get(LANGUAGE_COLUMN) or item.language
    raise LanguageInvalid(
        f"manifest row {row!r}: language {one_line(written[:40])!r} is not one the service "
        f"takes; use one of: {known}"
    )
