"""Reviewers' accounts: passwords hashed with argon2id, sign-in with a lockout.

A password is never stored, logged or compared as given: argon2-cffi's PasswordHasher
(RFC 9106 parameters) hashes it, and verifying an unknown name still costs one hash so
a name cannot be guessed from the time an answer takes. After MAX_FAILED_LOGINS wrong
passwords in a row the account is locked for `lockout_s`, the right password included;
an admin unlocks it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from config.workstation import MAX_FAILED_LOGINS
from storage.errors import ReviewerInvalid
from storage.records import ReviewerRecord
from storage.review_interface import ReviewUnitOfWork

ROLES = ("reviewer", "admin")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
_MIN_PASSWORD_CHARS = 8
_HASHER = PasswordHasher()
# Verified when the name is unknown, so both answers take one hash's time.
_DUMMY_HASH = _HASHER.hash("not a password of anyone")


class LoginResult(StrEnum):
    """How a sign-in ended."""

    OK = "ok"
    WRONG = "wrong"  # unknown name or wrong password (the page says the same for both)
    LOCKED = "locked"  # locked now or before: the password was not even judged
    LOCKED_NOW = "locked_now"  # this wrong password locked the account
    DISABLED = "disabled"


@dataclass(frozen=True)
class Login:
    """A sign-in's result and, when it succeeded, who signed in."""

    result: LoginResult
    reviewer: ReviewerRecord | None = None


def check_name(name: str) -> str:
    """A plain account name (letters, digits, . _ @ -); raises ReviewerInvalid."""
    if not _NAME.fullmatch(name):
        raise ReviewerInvalid(
            "a reviewer name is 1-64 letters, digits, '.', '_', '@' or '-', starting with "
            "a letter or digit"
        )
    return name


def add_reviewer(uow: ReviewUnitOfWork, *, name: str, role: str, password: str) -> ReviewerRecord:
    """Create an account; raises ReviewerInvalid for a bad name, role or short password."""
    if role not in ROLES:
        raise ReviewerInvalid(f"a role is one of {', '.join(ROLES)}")
    if len(password) < _MIN_PASSWORD_CHARS:
        raise ReviewerInvalid(f"a password has at least {_MIN_PASSWORD_CHARS} characters")
    return uow.reviewers.add_reviewer(
        name=check_name(name), role=role, password_hash=_HASHER.hash(password)
    )


def sign_in(uow: ReviewUnitOfWork, *, name: str, password: str, lockout_s: float) -> Login:
    """Judge a name and password, counting wrong ones; never raises for a bad pair."""
    reviewer = uow.reviewers.get_reviewer(name) if _NAME.fullmatch(name) else None
    stored = uow.reviewers.password_hash(name) if reviewer is not None else None
    if reviewer is None or stored is None:
        _verify(_DUMMY_HASH, password)
        return Login(LoginResult.WRONG)
    if reviewer.locked_until is not None and reviewer.locked_until > uow.reviewers.now():
        return Login(LoginResult.LOCKED, reviewer)
    if not _verify(stored, password):
        after = uow.reviewers.record_failure(
            name, max_failures=MAX_FAILED_LOGINS, lockout_s=lockout_s
        )
        locked = after.locked_until is not None and after.failed_count == 0
        return Login(LoginResult.LOCKED_NOW if locked else LoginResult.WRONG, after)
    if reviewer.disabled:
        return Login(LoginResult.DISABLED, reviewer)
    if _HASHER.check_needs_rehash(stored):
        uow.reviewers.set_password_hash(name, _HASHER.hash(password))
    return Login(LoginResult.OK, uow.reviewers.record_success(name))


def _verify(stored: str, password: str) -> bool:
    try:
        return _HASHER.verify(stored, password)
    except (VerificationError, InvalidHashError):
        return False
