"""A reviewer's workstation session: a sign-in settled and its session started, a
sign-out; each with its audit event (login, login_failed, locked_out, logout) in the same
unit of work, so no face can sign someone in or out without the trail saying so.

The face keeps what is the browser's: the throttle, the argon2 verification outside any
transaction (tasks/review/accounts.py: look_up, password_matches), the tokens and the
cookies. Only digests of tokens reach this module.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from audit import AuditAction, record_event
from storage.review_interface import ReviewUnitOfWork
from tasks.review.accounts import Candidate, Login, LoginResult, settle_sign_in


@dataclass(frozen=True)
class NewSession:
    """The session a successful sign-in starts (digests, never the browser's token)."""

    id_sha256: str
    csrf_token: str
    idle_s: float
    replaces_sha256: str | None = None  # the browser's session before this sign-in


def settle_sign_in_session(
    uow: ReviewUnitOfWork,
    candidate: Candidate,
    *,
    matched: bool,
    password: str,
    lockout_s: float,
    session: NewSession,
) -> Login:
    """Settle the sign-in, start `session` on success (ending the one it replaces), and
    record what happened."""
    name = candidate.reviewer.name if candidate.reviewer is not None else _unknown(candidate.name)
    outcome = settle_sign_in(
        uow, candidate, matched=matched, password=password, lockout_s=lockout_s
    )
    if outcome.result is LoginResult.OK and outcome.reviewer is not None:
        if session.replaces_sha256 is not None:
            uow.web_sessions.end_session(session.replaces_sha256)
        uow.web_sessions.start_session(
            id_sha256=session.id_sha256,
            reviewer_id=outcome.reviewer.id,
            csrf_token=session.csrf_token,
            idle_s=session.idle_s,
        )
        record_event(uow, action=AuditAction.LOGIN, actor=name)
        return outcome
    detail: dict[str, str | int] = {"reason": outcome.result.value}
    record_event(uow, action=AuditAction.LOGIN_FAILED, actor=name, detail=detail)
    if outcome.result is LoginResult.LOCKED_NOW:
        record_event(uow, action=AuditAction.LOCKED_OUT, actor=name, target=name)
    return outcome


def sign_out(uow: ReviewUnitOfWork, *, id_sha256: str, reviewer_name: str) -> None:
    """End the session whose token digests to `id_sha256`, on the trail."""
    uow.web_sessions.end_session(id_sha256)
    record_event(uow, action=AuditAction.LOGOUT, actor=reviewer_name)


def _unknown(typed: str) -> str:
    """What the trail keeps of a typed name that names no account: people type their
    password into the name field, so only a short hash of it."""
    digest = hashlib.sha256(typed.encode("utf-8", "surrogatepass")).hexdigest()
    return f"unknown-name:{digest[:16]}"
