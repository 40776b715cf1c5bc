"""The workstation's filter choices read from the store, on SQLite and on PostgreSQL
(whose json type has no equality: the flags cannot be compared with DISTINCT)."""

from __future__ import annotations

from storage.records import SourceFile
from storage.review_interface import ReviewStore


def _waiting(store: ReviewStore, name: str, *, language: str, flags: tuple[str, ...]) -> None:
    with store.unit_of_work() as uow:
        uow.items.register_items([SourceFile(f"/archive/{name}.wav", 100, "v1")], language=language)
        [item] = uow.claims.claim_batch(owner="w1", language=language, limit=1, lease_s=60)
        uow.claims.set_fingerprint(
            item.id, sha256=name * 64, size_bytes=100, lease_token=item.lease_token
        )
        uow.claims.finish_item(
            item.id, lease_token=item.lease_token, text="words", duration_ms=1000,
            chunk_count=1, extras={}, flags=flags,
        )  # fmt: skip


def test_the_choices_are_the_languages_and_flags_of_what_waits(store: ReviewStore) -> None:
    _waiting(store, "a", language="hi-IN", flags=("too_few_words", "script_mismatch"))
    _waiting(store, "b", language="en-IN", flags=("too_few_words",))
    _waiting(store, "c", language="ta-IN", flags=())  # done: not waiting, not a choice
    with store.unit_of_work(read_only=True) as uow:
        choices = uow.reviews.queue_choices()
    assert (choices.languages, choices.flags) == (
        ["en-IN", "hi-IN"],
        ["script_mismatch", "too_few_words"],
    )
