"""Decisions made on a page a colleague has saved over since, and what refused pages show.

Each decision (accept, finalize, send back) carries the revision it was made on; a
stale one is refused with 409 and the page names who saved what. Every answer that
shows transcript text is an audited view, and a search is an audit event of its own.
"""

from __future__ import annotations

import html
import re

import httpx
import pytest

from tests.helpers.review import audit_events, get_item
from tests.web.conftest import SEGMENTS
from tests.web.test_pages import client_of, post_edit
from tests.web.workstation import Served, csrf_of

_BASE = re.compile(r'name="base_revision" value="(\d+)"')


def decide(
    client: httpx.Client, page: str, item_id: int, action: str, **extra: str
) -> httpx.Response:
    """Press a decision's button on a page loaded earlier (its base revision, its text)."""
    found = _BASE.search(page)
    assert found is not None
    editor = re.search(r'data-testid="editor"[^>]*>([^<]*)</textarea>', page)
    assert editor is not None
    data = {"csrf_token": csrf_of(page), "base_revision": found.group(1),
            "text": html.unescape(editor.group(1)), **extra}  # fmt: skip
    return client.post(f"/items/{item_id}/{action}", data=data)


@pytest.mark.parametrize("action", ["accept", "send-back", "finalize"])
def test_a_decision_on_a_page_loaded_before_a_colleagues_draft_is_refused(
    served: Served, recording: int, action: str
) -> None:
    with client_of(served, "ann") as ann, client_of(served, "bob") as bob:
        bob_page = bob.get(f"/items/{recording}").text
        assert post_edit(ann, recording, "draft", "ann's correction").status_code == 303
        refused = decide(bob, bob_page, recording, action)
    assert refused.status_code == 409
    said = html.unescape(refused.text)
    assert "revision 1 by ann was saved after the version you edited" in said
    assert "ann's correction</textarea>" in said  # the colleague's draft is what the editor shows
    item = get_item(served.store, recording)
    assert (item.status, item.text) == ("needs_review", " ".join(s.text for s in SEGMENTS))
    assert _revision_kinds(served) == ["draft"]


def test_a_decision_without_its_revision_is_refused(served: Served, recording: int) -> None:
    with client_of(served, "bob") as bob:
        page = bob.get(f"/items/{recording}").text
        refused = bob.post(f"/items/{recording}/accept", data={"csrf_token": csrf_of(page)})
    assert refused.status_code == 400
    assert get_item(served.store, recording).status == "needs_review"


def test_send_back_over_a_draft_warns_and_keeps_the_draft_until_confirmed(
    served: Served, recording: int
) -> None:
    with client_of(served, "ann") as ann, client_of(served, "bob") as bob:
        assert post_edit(ann, recording, "draft", "ann's correction").status_code == 303
        page = bob.get(f"/items/{recording}").text
        assert 'data-testid="draft-warning"' in page
        warned = decide(bob, page, recording, "send-back")
        assert warned.status_code == 409
        said = html.unescape(warned.text)
        assert "ann saved a draft (revision 1)" in said
        assert "ann's correction</textarea>" in said
        assert get_item(served.store, recording).status == "needs_review"
        confirm = re.search(r'name="over_draft" value="(\d+)"', warned.text)
        assert confirm is not None
        assert confirm.group(1) == "1"
        sent = decide(bob, warned.text, recording, "send-back", over_draft=confirm.group(1))
    assert sent.status_code == 303
    assert get_item(served.store, recording).status == "pending"


@pytest.mark.parametrize("stale", [True, False])
def test_a_refused_decision_that_shows_the_transcript_is_an_audited_view(
    served: Served, recording: int, stale: bool
) -> None:
    with client_of(served, "ann") as ann, client_of(served, "bob") as bob:
        bob_page = bob.get(f"/items/{recording}").text
        if stale:
            post_edit(ann, recording, "draft", "ann's correction")
        else:
            assert (
                decide(ann, ann.get(f"/items/{recording}").text, recording, "accept").status_code
                == 303
            )
        refused = decide(bob, bob_page, recording, "accept")
    assert refused.status_code == (409 if stale else 400)
    assert 'data-testid="editor"' in refused.text
    last = audit_events(served.store)[-1]
    assert (last.action, last.actor, last.item_id) == ("transcript_viewed", "bob", recording)


def test_a_search_is_an_audit_event_with_its_query_and_count_never_text(
    served: Served, recording: int
) -> None:
    with client_of(served, "ann") as ann:
        page = ann.get("/items?search=ward/")
        assert 'data-testid="queue-item"' in page.text
    last = audit_events(served.store)[-1]
    assert (last.action, last.actor) == ("recordings_searched", "ann")
    assert last.detail == {"query": "ward/", "count": 1}
    assert "met for men" not in repr(last)


def _revision_kinds(served: Served) -> list[str]:
    with served.store.unit_of_work(read_only=True) as uow:
        item = uow.item_queries.get_item(1)
        assert item is not None
        return [r.kind for r in uow.revisions.list_revisions(item)]
