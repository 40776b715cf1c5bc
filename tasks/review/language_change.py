"""A reviewer gives a recording another language: a new item in that language, sent again.

The recording was dictated in another language than the one it was transcribed in (the
manifest said so, or said nothing): the reviewer names the right one. Everything stays
keyed by recording and language, so this registers the recording in the new language
(pending, its manifest row's `language` set to it) and keeps the old item and its
transcript as they are. The next run of its source with a manifest language column, or
`medasr rerun-failures`, sends it. The decision and its audit event are one transaction.
"""

from __future__ import annotations

from audit import AuditAction, record_event
from config.errors import ReviewRefused
from service.contract import LANGUAGES, is_supported_language
from storage.errors import NotUnderReview
from storage.interface import UnitOfWork
from storage.records import ItemRecord, SourceFile

LANGUAGE_COLUMN = "language"


class LanguageNotTaken(ReviewRefused):
    """The language a reviewer chose is not one the service takes, or is the same."""

    kind = "language_invalid"


def change_language(uow: UnitOfWork, *, item_id: int, language: str, author: str) -> ItemRecord:
    """Register item `item_id`'s recording in `language` (audited `language_changed`);
    returns the new item. Raises NotUnderReview (no such item) or LanguageNotTaken."""
    item = uow.item_queries.get_item(item_id)
    if item is None:
        raise NotUnderReview(f"there is no recording {item_id}")
    if not is_supported_language(language):
        raise LanguageNotTaken(
            f"{language[:40]!r} is not a language the service takes; use one of: "
            + ", ".join(LANGUAGES)
        )
    if language == item.language:
        raise LanguageNotTaken(f"recording {item_id} is already in {language}")
    listed = SourceFile(item.source_uri, item.size_bytes, item.source_version)
    uow.items.register_items([listed], language=language)
    metadata = {**item.metadata, LANGUAGE_COLUMN: language}
    uow.items.set_item_metadata({item.source_uri: metadata}, language=language)
    new = uow.item_queries.find_items(source_uris=[item.source_uri], language=language)
    created = new[item.source_uri]
    record_event(
        uow,
        action=AuditAction.LANGUAGE_CHANGED,
        actor=author,
        item_id=item.id,
        detail={"from": item.language, "to": language, "new_item": created.id},
    )
    return created
