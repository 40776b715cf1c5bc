"""A day's work that flows, in Debian's chromium: after a decision the next item of the
queue opens (with the queue's filters) and says what was done to the last one; Finalize
and Send back ask first unless pressed by their keys; the player stays in view."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from storage.review_interface import ReviewStore
from tests.helpers.review import add_transcribed, get_item
from tests.web.browser import launched_browser
from tests.web.conftest import SEGMENTS
from tests.web.test_browser import signed_in_page
from tests.web.workstation import Served, serve

pytestmark = pytest.mark.xdist_group("browser")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from launched_browser()


@pytest.fixture
def served(review_store: ReviewStore, accounts, recording) -> Iterator[Served]:
    with serve(review_store) as running:
        yield running


@pytest.fixture
def page(browser: Any, served: Served) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    yield signed_in_page(context, served)
    context.close()


def tamil_pair(store: ReviewStore) -> tuple[int, int]:
    first = add_transcribed(store, "/src/ta/1.wav", segments=SEGMENTS, language="ta")
    second = add_transcribed(store, "/src/ta/2.wav", segments=SEGMENTS, language="ta")
    return first, second


def test_after_accept_and_finalize_the_next_item_of_the_filtered_queue_opens(
    page: Any, served: Served
) -> None:
    first, second = tamil_pair(served.store)
    page.goto(f"{served.url}/?language=ta")
    page.get_by_test_id("queue-item").first.click()
    page.wait_for_url(f"**/items/{first}**")
    page.get_by_test_id("accept").click()
    page.wait_for_url(f"**/items/{second}**")
    notice = page.get_by_test_id("next-item-notice")
    expect(notice).to_contain_text("Accepted")
    expect(notice).to_contain_text("ta/1.wav")
    assert page.get_by_test_id("last-item-link").get_attribute("href").startswith(f"/items/{first}")
    assert get_item(served.store, first).status == "done"

    page.get_by_test_id("editor").fill("corrected")
    page.keyboard.press("Control+Enter")  # the en-IN recording waits, but not in this queue
    page.wait_for_url("**/?language=ta**")
    expect(page.get_by_test_id("next-item-notice")).to_contain_text("Finalized")
    expect(page.get_by_test_id("next-item-notice")).to_contain_text("Nothing else waits")
    page.get_by_test_id("last-item-link").click()
    page.wait_for_url(f"**/items/{second}**")
    expect(page.get_by_test_id("editor")).to_have_value("corrected")
