"""The workstation on a real floor, in Debian's chromium: two reviewers on one recording,
and a recording that changed on disk since it was transcribed."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.helpers.review import audit_actions, get_item
from tests.web.test_browser import press_and_confirm, signed_in_page
from tests.web.workstation import Served, write_tone_wav

pytestmark = pytest.mark.xdist_group("browser")


def test_accept_on_a_page_a_colleague_saved_over_is_refused(
    browser: Any, served: Served, recording: int
) -> None:
    ann_context, bob_context = browser.new_context(), browser.new_context()
    try:
        bob = signed_in_page(bob_context, served, "bob")
        bob.goto(f"{served.url}/items/{recording}")
        ann = signed_in_page(ann_context, served, "ann")
        ann.goto(f"{served.url}/items/{recording}")
        ann.get_by_test_id("editor").fill("metformin 500 mg twice daily")
        ann.get_by_test_id("save-draft").click()
        expect(ann.get_by_test_id("notice")).to_contain_text("Draft saved")

        bob.get_by_test_id("accept").click()
        expect(bob.get_by_test_id("notice")).to_contain_text("revision 1 by ann was saved")
        expect(bob.get_by_test_id("editor")).to_have_value("metformin 500 mg twice daily")
        assert get_item(served.store, recording).status == "needs_review"

        press_and_confirm(bob, "send-back")
        expect(bob.get_by_test_id("notice")).to_contain_text("ann saved a draft (revision 1)")
        expect(bob.get_by_test_id("editor")).to_have_value("metformin 500 mg twice daily")
        assert get_item(served.store, recording).status == "needs_review"
    finally:
        ann_context.close()
        bob_context.close()


def test_a_recording_replaced_on_disk_plays_nothing_and_says_why(
    browser: Any, served: Served, recording: int, tmp_path: Path
) -> None:
    other = write_tone_wav(tmp_path / "other-patient.wav", seconds=9.0, rate_hz=8_000)
    os.replace(other, tmp_path / "ward" / "a.wav")
    context = browser.new_context()
    try:
        page = signed_in_page(context, served)
        page.goto(f"{served.url}/items/{recording}")
        changed = "the recording changed on disk since it was transcribed"
        expect(page.get_by_test_id("notice")).to_contain_text(changed)  # the player's load
        link = page.get_by_test_id("segment-play").first.get_attribute("href")
        page.goto(f"{served.url}{link}")  # the segment's link opened on its own
        expect(page.get_by_test_id("audio-changed")).to_contain_text(changed)
    finally:
        context.close()
    assert audit_actions(served.store)[-1] == "audio_changed"
