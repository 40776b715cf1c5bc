"""A reviewer gives a recording another language from its page: a new item in that
language waits to be sent, the old one and its transcript are kept, and the decision is
in the audit trail (over a real socket, httpx)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from storage.review_interface import ReviewStore
from tests.helpers.review import audit_events, get_item
from tests.web.workstation import csrf_of, serve, sign_in


@pytest.fixture
def ann(review_store: ReviewStore, accounts: None, recording: int) -> Iterator[httpx.Client]:
    with serve(review_store) as running, httpx.Client(base_url=running.url) as http:
        assert sign_in(http, "ann").status_code == 303
        yield http


def items_of(store: ReviewStore, uri: str) -> dict[str, str]:
    with store.unit_of_work(read_only=True) as uow:
        return {
            language: found[uri].status
            for language in ("en-IN", "hi", "ta")
            if (found := uow.item_queries.find_items(source_uris=[uri], language=language))
        }


def test_a_reviewer_changes_the_language_and_the_recording_waits_in_it(
    review_store: ReviewStore, ann: httpx.Client, recording: int
) -> None:
    before = get_item(review_store, recording)
    page = ann.get(f"/items/{recording}").text
    assert 'data-testid="change-language"' in page

    changed = ann.post(
        f"/items/{recording}/language", data={"language": "hi", "csrf_token": csrf_of(page)}
    )

    assert changed.status_code == 303
    assert items_of(review_store, before.source_uri) == {
        before.language: before.status,  # kept as it was
        "hi": "pending",  # the next run sends it in Hindi
    }
    with review_store.unit_of_work(read_only=True) as uow:
        new = uow.item_queries.find_items(source_uris=[before.source_uri], language="hi")
    assert new[before.source_uri].metadata["language"] == "hi"
    [event] = [e for e in audit_events(review_store) if e.action == "language_changed"]
    assert (event.actor, event.item_id) == ("ann", recording)
    assert event.detail == {
        "from": before.language,
        "to": "hi",
        "new_item": new[before.source_uri].id,
    }


@pytest.mark.parametrize("language", ["english", "en-IN"])
def test_a_language_the_service_does_not_take_or_the_same_changes_nothing(
    review_store: ReviewStore, ann: httpx.Client, recording: int, language: str
) -> None:
    before = get_item(review_store, recording)
    page = ann.get(f"/items/{recording}").text

    refused = ann.post(
        f"/items/{recording}/language", data={"language": language, "csrf_token": csrf_of(page)}
    )

    assert refused.status_code == 400
    assert items_of(review_store, before.source_uri) == {before.language: before.status}
    assert not [e for e in audit_events(review_store) if e.action == "language_changed"]


def test_without_the_csrf_token_nothing_changes(
    review_store: ReviewStore, ann: httpx.Client, recording: int
) -> None:
    before = get_item(review_store, recording)

    refused = ann.post(f"/items/{recording}/language", data={"language": "ta"})

    assert refused.status_code == 403
    assert items_of(review_store, before.source_uri) == {before.language: before.status}
