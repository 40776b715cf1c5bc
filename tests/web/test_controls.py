"""Each security control of the workstation, tested for every route it protects (the
routes are read from the application, so a new one is covered or this test fails):
CSRF on every state-changing route, compared over the whole token; the role check on
every admin route; a Range past the audio clamped, never padded with zeros."""

from __future__ import annotations

import re

import httpx
import pytest
from starlette.routing import Route

from config.workstation import WebSettings
from tests.helpers.review import audit_actions, get_item
from tests.web.test_pages import client_of
from tests.web.workstation import Served, csrf_of
from web.app import build_app

_APP = build_app(None, web=WebSettings(), tls=False)  # type: ignore[arg-type]
CHANGING = sorted(
    route.path
    for route in _APP.routes
    if isinstance(route, Route) and route.methods and "POST" in route.methods
)
ADMIN = sorted(
    (method, route.path)
    for route in _APP.routes
    if isinstance(route, Route) and route.path.startswith("/admin")
    for method in sorted(route.methods or ())
    if method != "HEAD"
)


def test_the_routes_are_the_ones_these_tests_cover() -> None:
    assert "/items/{item_id:id}/accept" in CHANGING
    assert len(CHANGING) >= 8  # login, logout, four decisions, two admin changes
    assert ("GET", "/admin") in ADMIN
    assert len(ADMIN) == 3


def concrete(path: str, item_id: int) -> str:
    return path.replace("{item_id:id}", str(item_id))


def wrong_tokens(token: str) -> list[str]:
    return [
        token[:-1],
        token[1:],
        token[: len(token) // 2],
        token + "x",
        token.upper(),
        " " + token,
        "",
    ]


@pytest.mark.parametrize("path", [p for p in CHANGING if p != "/login"])
def test_every_state_changing_route_refuses_anything_but_the_whole_token(
    served: Served, recording: int, path: str
) -> None:
    with client_of(served, "root") as root:
        page = root.get(f"/items/{recording}").text
        token = csrf_of(page)
        form = {"base_revision": "0", "text": "changed", "name": "zed", "role": "reviewer",
                "password": "a long password"}  # fmt: skip
        before = audit_actions(served.store)
        for wrong in wrong_tokens(token):
            answer = root.post(concrete(path, recording), data={**form, "csrf_token": wrong})
            assert answer.status_code == 403, (wrong, answer.status_code)
            if wrong and wrong == wrong.strip():  # a header value cannot start with a space
                headed = root.post(
                    concrete(path, recording), data=form, headers={"x-csrf-token": wrong}
                )
                assert headed.status_code == 403
        assert root.get("/").status_code == 200  # still signed in: /logout changed nothing
    assert audit_actions(served.store) == before
    assert get_item(served.store, recording).status == "needs_review"


def test_sign_in_refuses_anything_but_its_whole_token(served: Served) -> None:
    with httpx.Client(base_url=served.url) as client:
        token = csrf_of(client.get("/login").text)
        for wrong in wrong_tokens(token):
            data = {"name": "ann", "password": "correct horse battery", "csrf_token": wrong}
            assert client.post("/login", data=data).status_code == 403
        assert "medasr_session" not in client.cookies


@pytest.mark.parametrize(("method", "path"), ADMIN)
def test_every_admin_route_refuses_a_reviewer(served: Served, method: str, path: str) -> None:
    with client_of(served, "ann") as ann:
        token = csrf_of(ann.get("/").text)
        data = {"csrf_token": token, "name": "bob", "role": "admin", "password": "a long password"}
        answer = ann.request(method, path, data=data if method == "POST" else None)
    assert answer.status_code == 403
    assert not any(a.startswith("reviewer_") for a in audit_actions(served.store))


@pytest.mark.parametrize("past_bytes", [1, 1000, 10**9])
def test_a_range_ending_past_the_audio_is_clamped_never_padded(
    served: Served, recording: int, past_bytes: int
) -> None:
    with client_of(served, "ann") as ann:
        whole = ann.get(f"/items/{recording}/audio?start_ms=0&end_ms=1000").content
        total = len(whole)
        answer = ann.get(
            f"/items/{recording}/audio?start_ms=0&end_ms=1000",
            headers={"range": f"bytes=100-{total - 1 + past_bytes}"},
        )
    assert answer.status_code == 206
    assert answer.headers["content-range"] == f"bytes 100-{total - 1}/{total}"
    assert int(answer.headers["content-length"]) == total - 100
    assert answer.content == whole[100:]
    assert re.match(rb"RIFF", whole)
