"""A sign-in judged without starving the pages: throttled, hashed outside the store.

Before anything: the throttle per client address and per name (web/throttle.py) may
refuse the attempt (429). Then the account is read (a read-only unit of work), its
password verified by argon2 in a worker thread with at most VERIFICATIONS_AT_ONCE
(web/throttle.py) running at a time (the others wait on the event loop, holding no
thread and no transaction), and the outcome settled in a short unit of work of its own by
tasks/review/workstation_sessions.py (failure count, session, audit event). Signed-in pages
never wait behind a hash.
"""

from __future__ import annotations

from starlette.requests import Request

from config.workstation import WebSettings
from storage.review_interface import ReviewUnitOfWork
from tasks.review.accounts import Candidate, Login, fold_name, look_up
from tasks.review.workstation_sessions import NewSession, settle_sign_in_session
from web.context import in_unit_of_work, workstation
from web.security import new_token, token_digest


def retry_after_s(request: Request, *, name: str) -> int | None:
    """None when this attempt may go on; else the seconds the client must wait."""
    address = request.client.host if request.client is not None else "-"
    key = fold_name(name) or name.casefold()
    return workstation(request).throttle.admit(address=address, name=key)


async def judged_sign_in(
    request: Request, *, name: str, password: str, token: str, replaces: str | None
) -> Login:
    """The sign-in's outcome; on success the session `token` names is started and the
    browser's session before it (`replaces`, its cookie) ended."""
    found = workstation(request)
    candidate = await in_unit_of_work(request, lambda uow: look_up(uow, name=name), read_only=True)
    matched = await found.verifications.matches(candidate, password)
    return await in_unit_of_work(
        request,
        lambda uow: _settle(uow, candidate, matched=matched, password=password, token=token,
                            web=found.web, replaces=replaces),
    )  # fmt: skip


def _settle(
    uow: ReviewUnitOfWork,
    candidate: Candidate,
    *,
    matched: bool,
    password: str,
    token: str,
    web: WebSettings,
    replaces: str | None,
) -> Login:
    session = NewSession(
        id_sha256=token_digest(token),
        csrf_token=new_token(),
        idle_s=web.idle_timeout_s,
        replaces_sha256=token_digest(replaces) if replaces else None,
    )
    return settle_sign_in_session(
        uow, candidate, matched=matched, password=password, lockout_s=web.lockout_s,
        session=session,
    )  # fmt: skip
