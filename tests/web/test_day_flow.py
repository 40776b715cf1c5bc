"""A day's work that flows, in Debian's chromium: after a decision the next item of the
queue opens (with the queue's filters) and says what was done to the last one; Finalize
and Send back ask first unless pressed by their keys (a foot pedal's too); the player and
the keys stay in view and follow playback; one text on screen, the others a key away."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from storage.review_interface import ReviewStore
from tests.helpers.review import Segment, add_transcribed, file_fingerprint, get_item
from tests.web.conftest import SEGMENTS
from tests.web.test_browser import PLAYER, player, signed_in_page, wait_player
from tests.web.workstation import Served

pytestmark = pytest.mark.xdist_group("browser")

VIEW_HEIGHT_PX = 768  # a 1366x768 screen, the floor's usual one


@pytest.fixture
def page(browser: Any, served: Served) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1366, "height": VIEW_HEIGHT_PX})
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


def test_finalize_and_send_back_ask_first_unless_pressed_by_their_keys(
    page: Any, served: Served, recording: int
) -> None:
    other = add_transcribed(served.store, "/src/en/2.wav", segments=SEGMENTS)
    page.goto(f"{served.url}/items/{recording}")
    dialog = page.get_by_test_id("confirm-dialog")
    page.get_by_test_id("finalize").click()
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("Finalize")
    page.get_by_test_id("confirm-no").click()
    expect(dialog).to_be_hidden()
    assert get_item(served.store, recording).status == "needs_review"

    page.get_by_test_id("send-back").click()
    expect(dialog).to_contain_text("Send back")
    page.get_by_test_id("confirm-yes").click()
    page.wait_for_url(f"**/items/{other}?**")
    expect(page.get_by_test_id("next-item-notice")).to_contain_text("Sent back")
    assert get_item(served.store, recording).status == "pending"

    page.keyboard.press("Alt+Shift+B")  # its own key: no question
    page.wait_for_url(f"**/?notice=sent-back&done={other}.*")
    assert get_item(served.store, other).status == "pending"


def test_a_foot_pedal_sending_f4_f8_f9_drives_the_player(
    page: Any, served: Served, recording: int
) -> None:
    page.goto(f"{served.url}/items/{recording}")
    page.evaluate(f"() => {{ {PLAYER}.currentTime = 6; }}")
    page.keyboard.down("F8")  # the pedal pressed: play (from 2 s back)
    wait_player(page, "!p.paused")
    page.keyboard.down("F8")  # held: the key repeats, the player keeps playing
    assert player(page, "p.paused") is False
    page.keyboard.up("F8")
    page.keyboard.press("F8")
    wait_player(page, "p.paused")
    at = player(page, "p.currentTime")
    page.keyboard.press("F4")
    assert abs(player(page, "p.currentTime") - max(at - 5, 0)) < 0.05
    page.keyboard.press("F9")
    assert abs(player(page, "p.currentTime") - max(at - 5, 0) - 5) < 0.05


def test_the_player_and_the_keys_stay_in_view_and_follow_playback(
    page: Any, served: Served, recording: int, tmp_path: Path
) -> None:
    wav = tmp_path / "ward" / "a.wav"
    many = [Segment(i * 75, (i + 1) * 75, f"words of segment {i} " * 4) for i in range(120)]
    long_item = add_transcribed(
        served.store, str(wav), segments=many, language="ta", **file_fingerprint(wav)
    )
    page.goto(f"{served.url}/items/{long_item}")
    legend = page.get_by_test_id("shortcuts")
    expect(legend).to_be_visible()
    assert within_view(legend.bounding_box()), "the keys are listed below the fold"
    page.evaluate("() => window.scrollTo(0, document.body.scrollHeight)")
    page.get_by_test_id("editor").click()
    page.keyboard.press("End")
    assert within_view(page.get_by_test_id("player").bounding_box()), "the player scrolled away"

    page.evaluate(f"() => {{ {PLAYER}.currentTime = 4.5; }}")  # inside segment 60 (0-based)
    marked = page.locator("[data-testid=segment].playing")
    expect(marked).to_have_count(1)
    assert marked.get_attribute("data-start-ms") == "4500"
    assert within_view(marked.bounding_box()), "the segment played is out of sight"

    page.get_by_test_id("keys-legend").locator("summary").click()
    expect(legend).to_be_hidden()


def test_one_text_on_screen_the_machine_text_and_the_changes_one_key_away(
    page: Any, served: Served, recording: int
) -> None:
    page.goto(f"{served.url}/items/{recording}")
    editor, machine, diff = (page.get_by_test_id(t) for t in ("editor", "machine-text", "diff"))
    expect(editor).to_be_visible()
    expect(machine).to_be_hidden()
    expect(diff).to_be_hidden()
    page.keyboard.press("Alt+m")
    expect(machine).to_be_visible()
    expect(editor).to_be_hidden()
    page.keyboard.press("Alt+m")
    expect(diff).to_be_visible()
    expect(machine).to_be_hidden()
    page.keyboard.press("Alt+m")
    expect(editor).to_be_visible()
    expect(diff).to_be_hidden()
    page.get_by_test_id("tab-machine").click()
    expect(machine).to_be_visible()


def within_view(box: dict[str, float] | None) -> bool:
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= VIEW_HEIGHT_PX
