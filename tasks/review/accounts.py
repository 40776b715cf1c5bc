"""Reviewers' accounts: passwords hashed with argon2id, sign-in with a lockout.

A password is never stored, logged or compared as given: argon2-cffi's PasswordHasher
(RFC 9106 parameters) hashes it, and verifying an unknown name (or a locked account)
still costs one hash so a name cannot be guessed from the time an answer takes. After
MAX_FAILED_LOGINS wrong passwords in a row the account is locked for `lockout_s`, the
right password included; an admin unlocks it. A sign-in is three steps (look_up,
password_matches, settle_sign_in) so a face can hash outside any transaction.
"""

from __future__ import annotations

import re
import unicodedata
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


def fold_name(name: str) -> str | None:
    """The one spelling of an account name: Unicode NFKC, then casefold (`Ann`, `ANN`
    and fullwidth `ａｎｎ` are `ann`); None when it is no plain name (spaces around it,
    invisible or control characters, anything but letters, digits, . _ @ -)."""
    folded = unicodedata.normalize("NFKC", name).casefold()
    return folded if _NAME.fullmatch(folded) else None


def check_name(name: str) -> str:
    """The folded account name; raises ReviewerInvalid for one that is not plain."""
    folded = fold_name(name)
    if folded is None:
        raise ReviewerInvalid(
            "a reviewer name is 1-64 letters, digits, '.', '_', '@' or '-', starting with "
            "a letter or digit (no spaces or invisible characters)"
        )
    return folded


def account_named(uow: ReviewUnitOfWork, name: str) -> ReviewerRecord:
    """The account a name names, whatever its case or form; raises ReviewerInvalid."""
    found = uow.reviewers.find_reviewer(check_name(name))
    if found is None:
        raise ReviewerInvalid(f"there is no reviewer named {name!r}")
    return found


def add_reviewer(uow: ReviewUnitOfWork, *, name: str, role: str, password: str) -> ReviewerRecord:
    """Create an account under its folded name; raises ReviewerInvalid for a bad or taken
    name (in any case or form), a bad role, or a short or blank password."""
    if role not in ROLES:
        raise ReviewerInvalid(f"a role is one of {', '.join(ROLES)}")
    if len(password) < _MIN_PASSWORD_CHARS:
        raise ReviewerInvalid(f"a password has at least {_MIN_PASSWORD_CHARS} characters")
    if "\x00" in password or not password.strip():
        raise ReviewerInvalid("a password holds no NUL character and not only spaces")
    folded = check_name(name)
    taken = uow.reviewers.find_reviewer(folded)
    if taken is not None:
        raise ReviewerInvalid(
            f"{name!r} is taken: a reviewer named {taken.name!r} exists already "
            "(names are compared whatever their case or form)"
        )
    return uow.reviewers.add_reviewer(name=folded, role=role, password_hash=_HASHER.hash(password))


@dataclass(frozen=True)
class Candidate:
    """What the store says of a typed name before its password is judged."""

    name: str
    reviewer: ReviewerRecord | None  # None: no such account (or one without a password)
    stored_hash: str | None


def sign_in(uow: ReviewUnitOfWork, *, name: str, password: str, lockout_s: float) -> Login:
    """Judge a name and password, counting wrong ones; never raises for a bad pair.
    The three steps below, in one unit of work (the workstation runs them apart)."""
    candidate = look_up(uow, name=name)
    matched = password_matches(candidate, password)
    return settle_sign_in(uow, candidate, matched=matched, password=password, lockout_s=lockout_s)


def look_up(uow: ReviewUnitOfWork, *, name: str) -> Candidate:
    """The account a typed name names, and its password hash (a read)."""
    folded = fold_name(name)
    reviewer = uow.reviewers.find_reviewer(folded) if folded is not None else None
    stored = uow.reviewers.password_hash(reviewer.name) if reviewer is not None else None
    return Candidate(name=name, reviewer=reviewer if stored else None, stored_hash=stored)


def password_matches(candidate: Candidate, password: str) -> bool:
    """One argon2 verification whatever the name (an unknown one against a dummy hash, so
    both take one hash's time); touches no store, so no transaction waits on it."""
    if candidate.stored_hash is None:
        _verify(_DUMMY_HASH, password)
        return False
    return _verify(candidate.stored_hash, password)


def settle_sign_in(
    uow: ReviewUnitOfWork, candidate: Candidate, *, matched: bool, password: str, lockout_s: float
) -> Login:
    """The sign-in's result from a verification made outside the store: a locked account
    stays locked whatever the password; a wrong one is counted."""
    if candidate.reviewer is None:
        return Login(LoginResult.WRONG)
    name = candidate.reviewer.name
    reviewer = uow.reviewers.get_reviewer(name)  # again: it may have been locked since
    if reviewer is None:
        return Login(LoginResult.WRONG)
    if reviewer.locked_until is not None and reviewer.locked_until > uow.reviewers.now():
        return Login(LoginResult.LOCKED, reviewer)
    if not matched:
        after = uow.reviewers.record_failure(
            name, max_failures=MAX_FAILED_LOGINS, lockout_s=lockout_s
        )
        locked = after.locked_until is not None and after.failed_count == 0
        return Login(LoginResult.LOCKED_NOW if locked else LoginResult.WRONG, after)
    if reviewer.disabled:
        return Login(LoginResult.DISABLED, reviewer)
    if candidate.stored_hash is not None and _HASHER.check_needs_rehash(candidate.stored_hash):
        uow.reviewers.set_password_hash(name, _HASHER.hash(password))
    return Login(LoginResult.OK, uow.reviewers.record_success(name))


def _verify(stored: str, password: str) -> bool:
    try:
        return _HASHER.verify(stored, password)
    except (VerificationError, InvalidHashError):
        return False
