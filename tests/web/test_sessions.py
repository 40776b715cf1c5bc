"""Sign-in, sessions, CSRF, lockout, idle timeout and headers, over a real socket (httpx)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import httpx
import pytest

from config.workstation import WebSettings
from storage.review_interface import ReviewStore
from tests.helpers.review import PASSWORD, audit_actions, audit_events, get_item
from tests.web.workstation import Served, csrf_of, serve, sign_in
from web.security import token_digest


@pytest.fixture
def client(served: Served) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=served.url) as http:
        yield http


def test_nothing_answers_without_a_session(client: httpx.Client, recording: int) -> None:
    queue = client.get("/")
    assert queue.status_code == 303
    assert queue.headers["location"] == "/login"
    assert "a.wav" not in queue.text
    assert client.get(f"/items/{recording}").status_code == 303
    assert client.get("/items?search=ward").status_code == 303
    assert client.get(f"/items/{recording}/audio").status_code == 401
    assert client.get(f"/items/{recording}/peaks").status_code == 401  # fetched by the page
    assert client.get("/quality.json").status_code == 401
    assert client.head("/").status_code == 303
    assert client.post(f"/items/{recording}/finalize", data={"text": "x"}).status_code == 401


def test_head_reads_a_page_without_a_form_token(client: httpx.Client, recording: int) -> None:
    sign_in(client, "ann")
    for path in ("/", f"/items/{recording}", "/quality"):
        answer = client.head(path)
        assert (answer.status_code, answer.content) == (200, b""), path
        assert answer.headers["cache-control"] == "no-store"


@pytest.mark.parametrize(
    ("path", "signed", "status"),
    [("/login", False, 200), ("/", False, 303), ("/", True, 200), ("/static/review.js", True, 200)],
)
def test_every_answer_carries_the_security_headers(
    client: httpx.Client, path: str, signed: bool, status: int
) -> None:
    if signed:
        sign_in(client, "ann")
    response = client.get(path)
    assert response.status_code == status
    policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy
    assert "unsafe-inline" not in policy
    assert "frame-ancestors 'none'" in policy
    assert response.headers["cache-control"] == "no-store"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["x-frame-options"] == "DENY"


def test_the_pages_hold_no_inline_script(client: httpx.Client, recording: int) -> None:
    sign_in(client, "ann")
    for path in ("/login", "/", f"/items/{recording}"):
        page = client.get(path).text
        assert "<script>" not in page
        assert " on" + "click=" not in page


def test_a_session_cookie_is_httponly_strict_and_kept_only_as_a_digest(
    client: httpx.Client, sqlite_url: str
) -> None:
    signed = sign_in(client, "ann")
    assert signed.status_code == 303
    cookie = signed.headers["set-cookie"]
    assert cookie.startswith("medasr_session=")
    assert "HttpOnly" in cookie
    assert "SameSite=strict" in cookie or "SameSite=Strict" in cookie
    assert "Secure" not in cookie  # plain HTTP on loopback
    token = client.cookies["medasr_session"]
    with sqlite3.connect(sqlite_url.removeprefix("sqlite:///")) as db:
        stored = [row[0] for row in db.execute("SELECT id_sha256 FROM web_sessions")]
    assert stored == [token_digest(token)]


def test_sign_in_and_out_are_audit_events(client: httpx.Client, served: Served) -> None:
    sign_in(client, "ann")
    page = client.get("/")
    assert page.status_code == 200
    logout = client.post("/logout", data={"csrf_token": csrf_of(page.text)})
    assert logout.status_code == 303
    assert client.get("/").status_code == 303  # the session is gone
    assert audit_actions(served.store) == ["login", "logout"]
    assert PASSWORD not in repr(audit_events(served.store))


def test_five_wrong_passwords_lock_the_account_until_an_admin_unlocks_it(
    served: Served,
) -> None:
    with httpx.Client(base_url=served.url) as ann:
        statuses = [sign_in(ann, "ann", "wrong password").status_code for _ in range(5)]
        assert statuses == [401] * 5  # the fifth answers as an unknown name would
        locked = sign_in(ann, "ann")
        assert locked.status_code == 401  # the right password, refused while locked
        assert "locked" in locked.text
        assert "medasr_session" not in ann.cookies
    assert audit_actions(served.store).count("login_failed") == 6
    assert audit_actions(served.store).count("locked_out") == 1

    with httpx.Client(base_url=served.url) as admin:
        sign_in(admin, "root")
        page = admin.get("/admin")
        unlocked = admin.post(
            "/admin/unlock", data={"name": "ann", "csrf_token": csrf_of(page.text)}
        )
        assert unlocked.status_code == 303
    with httpx.Client(base_url=served.url) as ann:
        assert sign_in(ann, "ann").status_code == 303
    unlock = [e for e in audit_events(served.store) if e.action == "reviewer_unlocked"]
    assert [(e.actor, e.target) for e in unlock] == [("root", "ann")]


def test_an_admin_adds_an_account_and_the_trail_says_so(served: Served) -> None:
    with httpx.Client(base_url=served.url) as admin:
        sign_in(admin, "root")
        page = admin.get("/admin")
        added = admin.post(
            "/admin/reviewers",
            data={"name": "Bea", "role": "reviewer", "password": PASSWORD,
                  "csrf_token": csrf_of(page.text)},
        )  # fmt: skip
        assert added.status_code == 303
        assert "Account added." in admin.get(added.headers["location"]).text
        # The notice is one of the page's own sentences, never the link's words.
        forged = admin.get("/admin", params={"done": "Account bob was deleted"}).text
        assert "Account bob was deleted" not in forged
    with httpx.Client(base_url=served.url) as bea:
        assert sign_in(bea, "bea").status_code == 303
    events = [e for e in audit_events(served.store) if e.action == "reviewer_added"]
    assert [(e.actor, e.target, e.detail) for e in events] == [
        ("root", "bea", {"role": "reviewer"})
    ]
    assert PASSWORD not in repr(audit_events(served.store))


def test_a_reviewer_cannot_manage_accounts(client: httpx.Client) -> None:
    sign_in(client, "ann")
    assert client.get("/admin").status_code == 403


def test_a_state_change_without_the_csrf_token_is_refused_and_changes_nothing(
    client: httpx.Client, served: Served, recording: int
) -> None:
    sign_in(client, "ann")
    page = client.get(f"/items/{recording}")
    before = get_item(served.store, recording)
    for data in ({"text": "forged", "base_revision": "0"},
                 {"text": "forged", "base_revision": "0", "csrf_token": "wrong"}):  # fmt: skip
        for action in ("draft", "finalize", "accept", "send-back"):
            refused = client.post(f"/items/{recording}/{action}", data=data)
            assert refused.status_code == 403, action
            assert "nothing was changed" in refused.text
    assert get_item(served.store, recording) == before
    assert csrf_of(page.text)  # the page itself carries one


def test_sign_in_without_its_form_token_is_refused(client: httpx.Client) -> None:
    refused = client.post("/login", data={"name": "ann", "password": PASSWORD})
    assert refused.status_code == 403
    assert "medasr_session" not in client.cookies


def test_a_session_idle_past_its_timeout_ends(
    client: httpx.Client, sqlite_url: str, recording: int
) -> None:
    sign_in(client, "ann")
    assert client.get("/").status_code == 200
    # Time passing without a request: the session's end moved into the past.
    with sqlite3.connect(sqlite_url.removeprefix("sqlite:///")) as db:
        db.execute("UPDATE web_sessions SET expires_at = '2000-01-01 00:00:00.000000'")
    # The waveform is the page's own request: a 401 its script acts on, not the sign-in form.
    assert client.get(f"/items/{recording}/peaks").status_code == 401
    ended = client.get(f"/items/{recording}")
    assert ended.status_code == 303
    assert ended.headers["location"] == f"/login?expired=1&next=%2Fitems%2F{recording}"
    notice = client.get("/login?expired=1").text
    assert "15 minutes without activity" in notice
    with sqlite3.connect(sqlite_url.removeprefix("sqlite:///")) as db:
        assert db.execute("SELECT count(*) FROM web_sessions").fetchone() == (0,)


def test_the_page_keeps_its_session_alive_with_its_csrf_token(
    client: httpx.Client, sqlite_url: str
) -> None:
    sign_in(client, "ann")
    token = csrf_of(client.get("/").text)
    assert client.post("/keepalive").status_code == 403
    with sqlite3.connect(sqlite_url.removeprefix("sqlite:///")) as db:
        db.execute("UPDATE web_sessions SET expires_at = '2999-01-01 00:00:00.000000'")
    assert client.post("/keepalive", headers={"x-csrf-token": token}).status_code == 204
    with sqlite3.connect(sqlite_url.removeprefix("sqlite:///")) as db:
        (expires,) = db.execute("SELECT expires_at FROM web_sessions").fetchone()
    assert expires < "2999"  # the idle time restarted from now
    with sqlite3.connect(sqlite_url.removeprefix("sqlite:///")) as db:
        db.execute("UPDATE web_sessions SET expires_at = '2000-01-01 00:00:00.000000'")
    assert client.post("/keepalive", headers={"x-csrf-token": token}).status_code == 401


def test_a_form_sent_after_the_session_ended_leads_back_through_sign_in(
    client: httpx.Client, served: Served, sqlite_url: str, recording: int
) -> None:
    sign_in(client, "ann")
    token = csrf_of(client.get(f"/items/{recording}").text)
    with sqlite3.connect(sqlite_url.removeprefix("sqlite:///")) as db:
        db.execute("UPDATE web_sessions SET expires_at = '2000-01-01 00:00:00.000000'")
    sent = client.post(
        f"/items/{recording}/draft", data={"text": "x", "base_revision": "0", "csrf_token": token}
    )
    assert sent.status_code == 303
    login = client.get(sent.headers["location"])
    assert "kept in this browser tab" in login.text
    assert f'name="next" value="/items/{recording}"' in login.text
    back = sign_in_to(client, login.text, next_path=f"/items/{recording}")
    assert back.headers["location"] == f"/items/{recording}"
    assert get_item(served.store, recording).status == "needs_review"


@pytest.mark.parametrize("next_path", ["https://elsewhere.example/", "//elsewhere", "/admin"])
def test_sign_in_returns_only_to_a_recording_of_this_workstation(
    client: httpx.Client, next_path: str
) -> None:
    form = client.get("/login", params={"next": next_path})
    assert 'name="next"' not in form.text
    assert sign_in_to(client, form.text, next_path=next_path).headers["location"] == "/"


def sign_in_to(client: httpx.Client, form: str, *, next_path: str) -> httpx.Response:
    data = {"name": "ann", "password": PASSWORD, "csrf_token": csrf_of(form), "next": next_path}
    return client.post("/login", data=data)


@pytest.mark.parametrize(
    ("idle_s", "words"),
    [(20, "20 seconds"), (60, "1 minute"), (900, "15 minutes"), (5400, "1 hour 30 minutes")],
)
def test_the_idle_timeout_is_said_in_words_a_person_uses(
    review_store: ReviewStore, idle_s: float, words: str
) -> None:
    with serve(review_store, web=WebSettings(idle_timeout_s=idle_s)) as running:
        notice = httpx.get(f"{running.url}/login?expired=1").text
    assert f"Your session ended after {words} without activity." in notice
