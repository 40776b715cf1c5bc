"""Signing in and out, and the guard every other page stands behind.

`signed_in(handler)` wraps a page: no live session answers a redirect to /login (a
page) or 401 (audio, actions); a state-changing request without the session's CSRF
token answers 403 and changes nothing. Sign-in has its own token (a cookie and a form
field that must match), so a page of another site cannot sign a browser in either.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response

from storage.records import WebSessionRecord
from tasks.review.accounts import LoginResult
from tasks.review.workstation_sessions import sign_out
from web.context import in_unit_of_work, render, workstation
from web.limits import read_form
from web.security import (
    CSRF_FIELD,
    CSRF_HEADER,
    LOGIN_COOKIE,
    SESSION_COOKIE,
    cookie_options,
    new_token,
    same_token,
    token_digest,
)
from web.sign_in import judged_sign_in, retry_after_s
from web.views import duration_words

Handler = Callable[[Request, WebSessionRecord], Awaitable[Response]]
CSRF_REFUSED = "refused: this request carried no valid CSRF token; nothing was changed"
_NAME_MAX_CHARS = 64
# A wrong password, an unknown name and a locked account answer alike (status and words),
# so the answers do not tell which names are accounts; the words say what may be why.
_WRONG = (
    "Wrong name or password. After 5 wrong passwords in a row an account is locked for a "
    "while; an admin can unlock it."
)
_LOGIN_NOTICES = {
    LoginResult.WRONG: _WRONG,
    LoginResult.LOCKED: _WRONG,
    LoginResult.LOCKED_NOW: _WRONG,
    LoginResult.DISABLED: "This account is disabled.",  # said only to the right password
}
_RETURN_TO = re.compile(r"(/items/[0-9]{1,18})(?:/[a-z-]+)?")
_KEPT_NOTICE = (
    " Anything you typed but had not saved is kept in this browser tab: sign in again"
    " and the recording's page offers it back."
)
_LOGIN_STATUS = {LoginResult.WRONG: 401, LoginResult.LOCKED: 401, LoginResult.LOCKED_NOW: 401}
_THROTTLED = "Too many sign-in attempts from here or for this name: try again in {} s."


async def current_session(request: Request) -> WebSessionRecord | None:
    """The live session of this browser (its idle time restarted), or None."""
    token = request.cookies.get(SESSION_COOKIE)
    if not token:
        return None
    idle_s = workstation(request).web.idle_timeout_s
    return await in_unit_of_work(
        request, lambda uow: uow.web_sessions.touch_session(token_digest(token), idle_s=idle_s)
    )


# Methods that only read (Starlette answers HEAD on every GET route): no CSRF token asked.
_READS = frozenset({"GET", "HEAD"})
# What a page's own script or player fetches: a 401 it can act on, not the sign-in form.
_FETCHED_BY_PAGES = ("/audio", "/peaks", ".json")


def signed_in(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    """A page that needs a live session, and a CSRF token when it changes anything."""

    async def endpoint(request: Request) -> Response:
        session = await current_session(request)
        if session is None:
            return _signed_out(request)
        if request.method not in _READS:
            form = await read_form(request)
            given = form.get(CSRF_FIELD) or request.headers.get(CSRF_HEADER)
            if not same_token(given if isinstance(given, str) else None, session.csrf_token):
                return PlainTextResponse(CSRF_REFUSED, status_code=403)
        return await handler(request, session)

    return endpoint


def _signed_out(request: Request) -> Response:
    """No live session: a page goes to the sign-in form (back here after it); a form sent
    by a session that ended too, its text kept by the page (static/session.js); audio,
    the page's own requests and a stranger's form get 401."""
    expired = bool(request.cookies.get(SESSION_COOKIE))
    page = request.method in _READS and not request.url.path.endswith(_FETCHED_BY_PAGES)
    ended_form = expired and request.method == "POST" and CSRF_HEADER not in request.headers
    if not (page or ended_form):
        return PlainTextResponse("sign in first", status_code=401)
    query: dict[str, str] = {"expired": "1"} if expired else {}
    back = return_path(request.url.path)
    if back is not None:
        query["next"] = back
    return RedirectResponse(f"/login?{urlencode(query)}" if query else "/login", status_code=303)


def return_path(path: str | None) -> str | None:
    """The recording's page a sign-in returns to (only such local paths: no open redirect)."""
    found = _RETURN_TO.fullmatch(path or "")
    return found.group(1) if found else None


async def keep_alive(request: Request, session: WebSessionRecord) -> Response:
    """POST /keepalive: the page's reviewer is working (typing, listening); `signed_in`
    restarted the idle time, nothing else happens."""
    return Response(status_code=204)


async def login_page(request: Request) -> Response:
    """GET /login: the sign-in form (a signed-in browser goes to the queue)."""
    if await current_session(request) is not None:
        return RedirectResponse("/", status_code=303)
    notice = ""
    back = return_path(request.query_params.get("next"))
    if request.query_params.get("expired"):
        idle = duration_words(workstation(request).web.idle_timeout_s)
        notice = f"Your session ended after {idle} without activity."
        notice += _KEPT_NOTICE if back else ""
    return _login_form(request, notice=notice, back=back)


async def login(request: Request) -> Response:
    """POST /login: name and password; a new session on success."""
    form = await read_form(request)
    given = form.get(CSRF_FIELD)
    expected = request.cookies.get(LOGIN_COOKIE) or ""
    if not expected or not same_token(given if isinstance(given, str) else None, expected):
        return PlainTextResponse(CSRF_REFUSED, status_code=403)
    name = str(form.get("name") or "")[:_NAME_MAX_CHARS]
    password = str(form.get("password") or "")
    back = return_path(str(form.get("next") or ""))
    wait_s = retry_after_s(request, name=name)
    if wait_s is not None:
        throttled = _login_form(request, notice=_THROTTLED.format(wait_s), status_code=429)
        throttled.headers["retry-after"] = str(wait_s)
        return throttled
    session_token = new_token()
    outcome = await judged_sign_in(
        request, name=name, password=password, token=session_token,
        replaces=request.cookies.get(SESSION_COOKIE),
    )  # fmt: skip
    if outcome.result is not LoginResult.OK:
        status = _LOGIN_STATUS.get(outcome.result, 403)
        return _login_form(
            request, notice=_LOGIN_NOTICES[outcome.result], status_code=status, back=back
        )
    response = RedirectResponse(back or "/", status_code=303)
    tls = workstation(request).tls
    response.set_cookie(SESSION_COOKIE, session_token, **cookie_options(tls=tls))
    response.delete_cookie(LOGIN_COOKIE, **cookie_options(tls=tls, path="/login"))
    return response


async def logout(request: Request, session: WebSessionRecord) -> Response:
    """POST /logout: the session ends."""

    await in_unit_of_work(
        request,
        lambda uow: sign_out(uow, id_sha256=session.id_sha256, reviewer_name=session.reviewer.name),
    )
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(SESSION_COOKIE, **cookie_options(tls=workstation(request).tls))
    return response


def _login_form(
    request: Request, *, notice: str = "", status_code: int = 200, back: str | None = None
) -> Response:
    token = new_token()
    context = {"login_token": token, "notice": notice, "csrf_field": CSRF_FIELD, "next": back}
    response: Response = render(request, "login.html", context, status_code=status_code)
    tls = workstation(request).tls
    response.set_cookie(LOGIN_COOKIE, token, **cookie_options(tls=tls, path="/login"))
    return response
