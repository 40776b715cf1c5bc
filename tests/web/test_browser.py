"""The workstation in a real browser: Debian's chromium driven by Playwright.

Sign-in and lockout, CSRF refusal, idle timeout, the queue's paging and filters,
segment playback, the keyboard, the stale-save refusal, and an edit finalized in the
page then delivered as a replacement to the devserver's docs, an MLLP listener and
FHIR, with the audit events of each step.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from playwright.sync_api import expect
from pydantic import SecretStr

from config.settings import DeliverySettings
from storage.review_interface import ReviewStore
from tests.helpers.review import PASSWORD, add_transcribed, audit_actions, get_item
from tests.service.mllp_listener import running_listener
from tests.tasks.delivery.delivery_helpers import deliver, delivery_settings, rows_of
from tests.web.conftest import SEGMENTS
from tests.web.workstation import Served

# One browser for the module (its fixture is module-scoped): `make test`'s workers keep
# these tests together rather than each launching chromium for a share of them.
pytestmark = pytest.mark.xdist_group("browser")

PLAYER = "document.querySelector('[data-testid=player]')"


def deliver_now(settings: Any, store: ReviewStore) -> Any:
    """`medasr deliver`'s step, in a thread of its own (Playwright's loop holds this one)."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(deliver, settings, store).result()


@pytest.fixture
def context(browser: Any) -> Iterator[Any]:
    opened = browser.new_context()
    yield opened
    opened.close()


def signed_in_page(context: Any, served: Served, name: str = "ann") -> Any:
    page = context.new_page()
    page.goto(f"{served.url}/login")
    page.get_by_test_id("login-user").fill(name)
    page.get_by_test_id("login-password").fill(PASSWORD)
    page.get_by_test_id("login-submit").click()
    page.wait_for_url(f"{served.url}/")
    return page


def press_and_confirm(page: Any, testid: str) -> None:
    """Press a decision that asks first (Finalize, Send back) and answer yes."""
    page.get_by_test_id(testid).click()
    page.get_by_test_id("confirm-yes").click()


def player(page: Any, expression: str) -> Any:
    return page.evaluate(f"() => {{ const p = {PLAYER}; return {expression}; }}")


def wait_player(page: Any, condition: str) -> None:
    page.wait_for_function(f"() => {{ const p = {PLAYER}; return {condition}; }}")


def test_sign_in_and_the_lockout_through_the_form(context: Any, served: Served) -> None:
    page = context.new_page()
    page.goto(f"{served.url}/")
    assert page.url == f"{served.url}/login"
    for _ in range(5):
        page.get_by_test_id("login-user").fill("ann")
        page.get_by_test_id("login-password").fill("wrong password")
        page.get_by_test_id("login-submit").click()
    assert "locked" in page.get_by_test_id("notice").inner_text()
    page.get_by_test_id("login-user").fill("ann")
    page.get_by_test_id("login-password").fill(PASSWORD)
    page.get_by_test_id("login-submit").click()
    assert "locked" in page.get_by_test_id("notice").inner_text()
    assert page.url == f"{served.url}/login"
    actions = audit_actions(served.store)
    assert (actions.count("login_failed"), actions.count("locked_out")) == (6, 1)


def test_a_change_without_its_csrf_token_is_refused(
    context: Any, served: Served, recording: int
) -> None:
    page = signed_in_page(context, served)
    page.goto(f"{served.url}/items/{recording}")
    page.evaluate("() => document.querySelector('#decision [name=csrf_token]').remove()")
    page.get_by_test_id("editor").fill("forged words")
    with page.expect_response(f"**/items/{recording}/finalize") as answer:
        press_and_confirm(page, "finalize")
    assert answer.value.status == 403
    assert "nothing was changed" in page.content()
    assert get_item(served.store, recording).status == "needs_review"


def test_an_idle_session_ends(context: Any, served: Served, sqlite_url: str) -> None:
    page = signed_in_page(context, served)
    with sqlite3.connect(sqlite_url.removeprefix("sqlite:///")) as db:
        db.execute("UPDATE web_sessions SET expires_at = '2000-01-01 00:00:00.000000'")
    page.reload()
    assert page.url == f"{served.url}/login?expired=1"
    assert "without activity" in page.get_by_test_id("notice").inner_text()


def test_the_queue_pages_and_filters(context: Any, served: Served, recording: int) -> None:
    for n in range(55):
        add_transcribed(served.store, f"/src/n/{n:02d}.wav", segments=SEGMENTS)
    tamil = add_transcribed(
        served.store, "/src/ta/1.wav", segments=SEGMENTS, language="ta", flags=["script_mismatch"]
    )
    page = signed_in_page(context, served)
    assert page.get_by_test_id("queue-item").count() == 50
    assert page.get_by_test_id("queue-item").first.get_attribute("href") == f"/items/{recording}"
    page.get_by_test_id("next-page").click()
    # A click starts a navigation; expect() waits for the new page where count() would race it.
    expect(page.get_by_test_id("queue-item")).to_have_count(7)
    assert page.get_by_test_id("next-page").count() == 0
    page.goto(f"{served.url}/")
    page.get_by_test_id("filter-language").select_option("ta")
    page.get_by_test_id("filter-apply").click()
    expect(page.get_by_test_id("queue-item")).to_have_count(1)
    page.get_by_test_id("queue-item").click()
    assert page.url == f"{served.url}/items/{tamil}?language=ta"  # the filter goes along


def test_a_segment_plays_inside_its_own_time(context: Any, served: Served, recording: int) -> None:
    page = signed_in_page(context, served)
    page.goto(f"{served.url}/items/{recording}")
    second = page.get_by_test_id("segment").nth(1)
    assert (second.get_attribute("data-start-ms"), second.get_attribute("data-end-ms")) == (
        "3000",
        "6000",
    )
    second.get_by_test_id("segment-play").click()
    wait_player(page, "!p.paused && p.currentTime > 3.2 && p.currentTime < 6")
    wait_player(page, "p.paused && p.currentTime >= 6 && p.currentTime < 6.6")
    assert "audio_served" in audit_actions(served.store)


def test_the_keyboard_drives_the_player_and_finalizes(
    context: Any, served: Served, recording: int
) -> None:
    page = signed_in_page(context, served)
    page.goto(f"{served.url}/items/{recording}")
    page.get_by_test_id("segment-play").nth(1).click()
    wait_player(page, "!p.paused && p.currentTime > 4.5")
    page.keyboard.press("Control+Space")
    wait_player(page, "p.paused")
    paused_at = player(page, "p.currentTime")
    page.keyboard.press("Control+Space")  # resumes 2 s back
    resumed_at = player(page, "p.currentTime")
    assert paused_at - 2.5 < resumed_at < paused_at - 1.5
    page.keyboard.press("Control+Space")
    wait_player(page, "p.paused")
    at = player(page, "p.currentTime")
    page.keyboard.press("Alt+ArrowRight")
    assert abs(player(page, "p.currentTime") - (at + 5)) < 0.05
    page.keyboard.press("Alt+ArrowLeft")
    assert abs(player(page, "p.currentTime") - at) < 0.05
    for _ in range(6):
        page.keyboard.press("Alt+ArrowUp")
    assert player(page, "p.playbackRate") == 2
    for _ in range(8):
        page.keyboard.press("Alt+ArrowDown")
    assert player(page, "p.playbackRate") == 0.5
    assert page.get_by_test_id("speed").inner_text() == "0.50×"
    page.evaluate(f"() => {{ {PLAYER}.currentTime = 0.5; }}")
    page.keyboard.press("Alt+n")  # the next segment: 3-6 s
    wait_player(page, "!p.paused && p.currentTime >= 3 && p.currentTime < 6")
    page.get_by_test_id("editor").fill("metformin 500 mg twice daily")
    page.keyboard.press("Control+Enter")
    page.wait_for_url(f"**/?notice=finalized&done={recording}.*")  # nothing else waits
    assert get_item(served.store, recording).text == "metformin 500 mg twice daily"
    assert "signed off" in page.get_by_test_id("notice").inner_text()


def test_the_second_save_of_a_stale_version_is_refused(
    browser: Any, served: Served, recording: int
) -> None:
    ann_context, bob_context = browser.new_context(), browser.new_context()
    try:
        ann = signed_in_page(ann_context, served, "ann")
        bob = signed_in_page(bob_context, served, "bob")
        for page in (ann, bob):
            page.goto(f"{served.url}/items/{recording}")
        ann.get_by_test_id("editor").fill("ann's version")
        ann.get_by_test_id("save-draft").click()
        ann.wait_for_url("**notice=draft")
        bob.get_by_test_id("editor").fill("bob's version")
        with bob.expect_response(f"**/items/{recording}/finalize") as answer:
            press_and_confirm(bob, "finalize")
        assert answer.value.status == 409
        assert "was saved after the version you edited" in bob.get_by_test_id("notice").inner_text()
        assert bob.get_by_test_id("editor").input_value() == "ann's version"
        assert bob.get_by_test_id("unsaved").input_value() == "bob's version"
    finally:
        ann_context.close()
        bob_context.close()
    item = get_item(served.store, recording)
    assert (item.status, item.text) == ("needs_review", " ".join(s.text for s in SEGMENTS))


def test_a_correction_after_filing_is_delivered_as_a_replacement_to_every_target(
    context: Any, served: Served, recording: int, devserver_factory, sqlite_url: str
) -> None:
    server = devserver_factory()
    with served.store.unit_of_work() as uow:
        uow.reviews.accept_review(recording, by="ann")
        uow.items.set_item_metadata(
            {get_item(served.store, recording).source_uri: {"patient_id": "MRN-7"}},
            language="en-IN",
        )
    base = delivery_settings(server, sqlite_url)

    def to(target: str) -> Any:
        fields = {"target": target, "fhir_token": SecretStr(server.token), "hl7_ack_timeout_s": 2.0}
        return base.model_copy(update={"delivery": DeliverySettings(**fields)})

    with running_listener() as listener:
        targets = {
            "docs": to("docs"),
            "mllp": to(f"mllp://127.0.0.1:{listener.port}"),
            "fhir": to(f"fhir+{server.url}/fhir"),
        }
        for settings in targets.values():
            assert deliver_now(settings, served.store).delivered == 1

        page = signed_in_page(context, served)
        page.goto(f"{served.url}/items?search=ward/a")
        page.get_by_test_id("queue-item").click()
        page.get_by_test_id("editor").fill("metformin 500 mg twice daily. review in 6 weeks.")
        press_and_confirm(page, "finalize")
        page.wait_for_url("**notice=finalized**")

        for settings in targets.values():
            assert deliver_now(settings, served.store).delivered == 1
            assert deliver_now(settings, served.store).planned == 0
        first_mdm, second_mdm = listener.received

    assert second_mdm.field("MSH", 9) == "MDM^T10^MDM_T02"
    assert second_mdm.field("TXA", 13) == first_mdm.field("TXA", 12)
    assert second_mdm.obx_lines() == ["metformin 500 mg twice daily. review in 6 weeks."]
    item = get_item(served.store, recording)
    rows = {row.target: [] for row in rows_of(served.store, item)}
    for row in rows_of(served.store, item):
        rows[row.target].append(row)
    for target_rows in rows.values():
        first, second = sorted(target_rows, key=lambda r: r.id)
        assert second.replaces_id == first.id
        assert (first.status, second.status) == ("delivered", "delivered")
    documents = list(server.state.fhir.resources.values())
    newer = [d for d in documents if d.get("relatesTo")]
    assert len(documents) == 2
    assert len(newer) == 1
    assert newer[0]["relatesTo"][0]["code"] == "replaces"
    actions = audit_actions(served.store)
    for step in ("login", "transcript_viewed", "revision_saved", "finalized"):
        assert step in actions
    assert actions.index("finalized") > actions.index("transcript_viewed")
