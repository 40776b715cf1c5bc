"""Reviewers and their browser sessions (`uow.reviewers`, `uow.web_sessions`).

Passwords arrive here already hashed (tasks/review/accounts.py owns the KDF); session
ids arrive as their sha256, so neither a password nor a cookie is ever stored as given.
Lockout and idle expiry are judged on the store's clock.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from storage import clock
from storage.errors import ReviewerInvalid
from storage.models import Reviewer, WebSession
from storage.records import ReviewerRecord, WebSessionRecord


class Reviewers:
    """Accounts of the review workstation."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def add_reviewer(self, *, name: str, role: str, password_hash: str) -> ReviewerRecord:
        """Create an account; raises ReviewerInvalid when the name is taken."""
        if self._row(name) is not None:
            raise ReviewerInvalid(f"a reviewer named {name!r} exists already")
        row = Reviewer(
            name=name,
            role=role,
            password_hash=password_hash,
            failed_count=0,
            locked_until=None,
            disabled=False,
            created_at=clock.store_now(self._session),
        )
        self._session.add(row)
        try:
            self._session.flush()
        except IntegrityError as exc:
            raise ReviewerInvalid(f"a reviewer named {name!r} exists already") from exc
        return _reviewer_record(row)

    def get_reviewer(self, name: str) -> ReviewerRecord | None:
        """One account by name."""
        row = self._row(name)
        return None if row is None else _reviewer_record(row)

    def find_reviewer(self, folded_name: str) -> ReviewerRecord | None:
        """The account whose name folds to `folded_name` (names are ASCII, so folding is
        lower-casing); of two made before names were folded, the one spelled exactly so
        (two others are ambiguous: None)."""
        rows = list(
            self._session.scalars(
                select(Reviewer)
                .where(func.lower(Reviewer.name) == folded_name)
                .order_by(Reviewer.id)
            )
        )
        exact = [row for row in rows if row.name == folded_name]
        if exact:
            return _reviewer_record(exact[0])
        return _reviewer_record(rows[0]) if len(rows) == 1 else None

    def password_hash(self, name: str) -> str | None:
        """The stored hash of an account's password (for verification only)."""
        return self._session.scalar(select(Reviewer.password_hash).where(Reviewer.name == name))

    def list_reviewers(self) -> list[ReviewerRecord]:
        """Every account, by name."""
        rows = self._session.scalars(select(Reviewer).order_by(Reviewer.name))
        return [_reviewer_record(row) for row in rows]

    def set_password_hash(self, name: str, password_hash: str) -> None:
        """Replace an account's hash (a rehash with today's parameters)."""
        self._change(name, password_hash=password_hash)

    def set_disabled(self, name: str, *, disabled: bool) -> ReviewerRecord:
        """Disable (or enable) an account and end its sessions; raises ReviewerInvalid."""
        reviewer = self._change(name, disabled=disabled)
        if disabled:
            self._session.execute(delete(WebSession).where(WebSession.reviewer_id == reviewer.id))
        return reviewer

    def unlock(self, name: str) -> ReviewerRecord:
        """Forget an account's failed attempts and lock; raises ReviewerInvalid."""
        return self._change(name, failed_count=0, locked_until=None)

    def record_failure(self, name: str, *, max_failures: int, lockout_s: float) -> ReviewerRecord:
        """One more wrong password; the `max_failures`-th locks the account for `lockout_s`."""
        row = self._locked_row(name)
        failed = row.failed_count + 1
        values: dict[str, Any] = {"failed_count": failed}
        if failed >= max_failures:
            values = {
                "failed_count": 0,
                "locked_until": clock.store_now(self._session) + timedelta(seconds=lockout_s),
            }
        return self._change(name, **values)

    def record_success(self, name: str) -> ReviewerRecord:
        """A right password outside a lock: the failed count starts again."""
        return self._change(name, failed_count=0, locked_until=None)

    def now(self) -> datetime:
        """The store's clock (lockouts and sessions are judged on it)."""
        return clock.store_now(self._session)

    def _row(self, name: str) -> Reviewer | None:
        return self._session.scalar(select(Reviewer).where(Reviewer.name == name))

    def _locked_row(self, name: str) -> Reviewer:
        row = self._session.scalar(select(Reviewer).where(Reviewer.name == name).with_for_update())
        if row is None:
            raise ReviewerInvalid(f"there is no reviewer named {name!r}")
        return row

    def _change(self, name: str, **values: Any) -> ReviewerRecord:
        self._locked_row(name)
        self._session.execute(
            update(Reviewer)
            .where(Reviewer.name == name)
            .values(**values)
            .execution_options(synchronize_session=False)
        )
        row = self._session.scalar(
            select(Reviewer).where(Reviewer.name == name).execution_options(populate_existing=True)
        )
        assert row is not None  # locked above, in this transaction
        return _reviewer_record(row)


class WebSessions:
    """Signed-in browsers: created at login, touched per request, ended by logout or idling."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def start_session(
        self, *, id_sha256: str, reviewer_id: int, csrf_token: str, idle_s: float
    ) -> None:
        """Record a new session that ends after `idle_s` without a request."""
        now = clock.store_now(self._session)
        self._session.add(
            WebSession(
                id_sha256=id_sha256,
                reviewer_id=reviewer_id,
                csrf_token=csrf_token,
                created_at=now,
                last_seen=now,
                expires_at=now + timedelta(seconds=idle_s),
            )
        )
        self._session.flush()

    def touch_session(self, id_sha256: str, *, idle_s: float) -> WebSessionRecord | None:
        """The live session (its idle time restarted), or None: unknown, idle too long, or
        its reviewer disabled (an expired one is removed)."""
        now = clock.store_now(self._session)
        found = self._session.execute(
            select(WebSession, Reviewer)
            .join(Reviewer, Reviewer.id == WebSession.reviewer_id)
            .where(WebSession.id_sha256 == id_sha256)
        ).first()
        if found is None:
            return None
        web_session, reviewer = found
        if web_session.expires_at <= now or reviewer.disabled:
            self.end_session(id_sha256)
            return None
        expires = now + timedelta(seconds=idle_s)
        self._session.execute(
            update(WebSession)
            .where(WebSession.id_sha256 == id_sha256)
            .values(last_seen=now, expires_at=expires)
            .execution_options(synchronize_session=False)
        )
        return WebSessionRecord(
            id_sha256=id_sha256,
            reviewer=_reviewer_record(reviewer),
            csrf_token=web_session.csrf_token,
            last_seen=now,
            expires_at=expires,
        )

    def end_session(self, id_sha256: str) -> None:
        """Forget a session (logout, idle, disabled account)."""
        self._session.execute(delete(WebSession).where(WebSession.id_sha256 == id_sha256))


def _reviewer_record(row: Reviewer) -> ReviewerRecord:
    return ReviewerRecord(
        id=row.id,
        name=row.name,
        role=row.role,
        failed_count=row.failed_count,
        locked_until=row.locked_until,
        disabled=row.disabled,
        created_at=row.created_at,
    )
