"""A long correction in a real browser: the session outlives the idle timeout while the
reviewer works, and a save that arrives after it ended is kept and offered back.

The idle timeout is the shortest the settings allow (10 s), so the tests wait real
seconds: what is under test is time passing in the page. The two that wait out or
outlast the timeout (15-20 s each, in the one browser worker) are in the slow tier.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from config.workstation import WebSettings
from storage.review_interface import ReviewStore
from tests.helpers.review import PASSWORD, get_item
from tests.web.workstation import Served, serve

pytestmark = pytest.mark.xdist_group("browser")

IDLE_S = 10.0
WORDS = "metformin 500 mg twice daily review in six weeks"


@pytest.fixture
def served(review_store: ReviewStore, accounts, recording) -> Iterator[Served]:
    with serve(review_store, web=WebSettings(idle_timeout_s=IDLE_S)) as running:
        yield running


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context()
    yield context.new_page()
    context.close()


def sign_in_here(page: Any) -> None:
    page.get_by_test_id("login-user").fill("ann")
    page.get_by_test_id("login-password").fill(PASSWORD)
    page.get_by_test_id("login-submit").click()


def open_item(page: Any, served: Served, item_id: int) -> None:
    page.goto(f"{served.url}/login")
    sign_in_here(page)
    page.wait_for_url(f"{served.url}/")
    page.goto(f"{served.url}/items/{item_id}")


def wait_for(condition: Callable[[], bool], *, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout_s} s waiting for {what}"
        time.sleep(0.2)


def session_expired(sqlite_url: str) -> bool:
    with sqlite3.connect(sqlite_url.removeprefix("sqlite:///")) as db:
        now = "strftime('%Y-%m-%d %H:%M:%f', 'now')"
        rows = db.execute(f"SELECT expires_at <= {now} FROM web_sessions").fetchall()
    return all(expired for (expired,) in rows)


@pytest.mark.slow
def test_typing_and_listening_longer_than_the_idle_timeout_keeps_the_session(
    page: Any, served: Served, recording: int
) -> None:
    open_item(page, served, recording)
    editor = page.get_by_test_id("editor")
    editor.fill("")
    page.get_by_test_id("segment-play").nth(0).click()
    # 1.5x the idle timeout of typing, one key every 0.3 s: no request but the page's own.
    editor.press_sequentially(WORDS, delay=int(IDLE_S * 1.5 * 1000 / len(WORDS)))
    page.get_by_test_id("save-draft").click()
    page.wait_for_url(f"**/items/{recording}?notice=draft")
    assert get_item(served.store, recording).status == "needs_review"
    assert page.get_by_test_id("editor").input_value() == WORDS
    assert page.evaluate("() => sessionStorage.length") == 0


@pytest.mark.slow
def test_a_save_after_the_session_ended_is_offered_back_after_signing_in(
    page: Any, served: Served, recording: int, sqlite_url: str
) -> None:
    open_item(page, served, recording)
    page.get_by_test_id("editor").fill(WORDS)
    # The reviewer walks away: the page stops asking for more time and the session ends.
    wait_for(lambda: session_expired(sqlite_url), timeout_s=IDLE_S * 4, what="the end")
    page.get_by_test_id("save-draft").click()
    page.wait_for_url("**/login?**")
    notice = page.get_by_test_id("notice").inner_text()
    assert "10 seconds without activity" in notice
    assert "kept in this browser" in notice
    sign_in_here(page)
    page.wait_for_url(f"{served.url}/items/{recording}")
    expect(page.get_by_test_id("recovered")).to_contain_text("not saved")
    assert page.get_by_test_id("editor").input_value() != WORDS
    page.get_by_test_id("restore-unsaved").click()
    assert page.get_by_test_id("editor").input_value() == WORDS
    page.get_by_test_id("save-draft").click()
    page.wait_for_url(f"**/items/{recording}?notice=draft")
    assert page.get_by_test_id("editor").input_value() == WORDS
    assert page.evaluate("() => sessionStorage.length") == 0
    expect(page.get_by_test_id("recovered")).to_have_count(0)


def test_leaving_a_page_with_unsaved_changes_asks_first(
    page: Any, served: Served, recording: int
) -> None:
    open_item(page, served, recording)
    page.get_by_test_id("editor").fill(WORDS)
    with page.expect_event("dialog") as asked:
        page.close(run_before_unload=True)
    assert asked.value.type == "beforeunload"
    asked.value.accept()
