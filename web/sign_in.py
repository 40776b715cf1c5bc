"""A sign-in judged without starving the pages: throttled, hashed outside the store.

Before anything: the throttle per client address and per name (web/throttle.py) may
refuse the attempt (429). Then the account is read (a read-only unit of work), its
password verified by argon2 in a worker thread with at most VERIFICATIONS_AT_ONCE
(web/throttle.py) running at a time (the others wait on the event loop, holding no
thread and no transaction), and the outcome written (failure count, session, audit event) in a short
unit of work of its own. Signed-in pages never wait behind a hash.
"""

from __future__ import annotations

import hashlib

from starlette.requests import Request

from audit import AuditAction, record_event
from config.workstation import WebSettings
from storage.review_interface import ReviewUnitOfWork
from tasks.review.accounts import (
    Candidate,
    Login,
    LoginResult,
    fold_name,
    look_up,
    settle_sign_in,
)
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
    """Settle the sign-in, start the session on success, and record what happened."""
    name = candidate.reviewer.name if candidate.reviewer is not None else _unknown(candidate.name)
    outcome = settle_sign_in(
        uow, candidate, matched=matched, password=password, lockout_s=web.lockout_s
    )
    if outcome.result is LoginResult.OK and outcome.reviewer is not None:
        if replaces:
            uow.web_sessions.end_session(token_digest(replaces))
        uow.web_sessions.start_session(
            id_sha256=token_digest(token),
            reviewer_id=outcome.reviewer.id,
            csrf_token=new_token(),
            idle_s=web.idle_timeout_s,
        )
        record_event(uow, action=AuditAction.LOGIN, actor=name)
        return outcome
    detail: dict[str, str | int] = {"reason": outcome.result.value}
    record_event(uow, action=AuditAction.LOGIN_FAILED, actor=name, detail=detail)
    if outcome.result is LoginResult.LOCKED_NOW:
        record_event(uow, action=AuditAction.LOCKED_OUT, actor=name, target=name)
    return outcome


def _unknown(typed: str) -> str:
    """What the trail keeps of a typed name that names no account: people type their
    password into the name field, so only a short hash of it."""
    digest = hashlib.sha256(typed.encode("utf-8", "surrogatepass")).hexdigest()
    return f"unknown-name:{digest[:16]}"
