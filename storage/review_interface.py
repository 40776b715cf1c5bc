"""The store as the review workstation sees it: the unit of work with its review parts.

`open_review_store(settings.storage)` (storage/__init__.py) returns a `ReviewStore`,
whose units of work add, to the pipeline's repositories, the review queue, the
reviewers' accounts and browser sessions, and the revisions of transcripts. The SQL
store satisfies these structurally.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from datetime import datetime
from typing import Protocol

from storage.interface import ChunkRepository, ReviewRepository, UnitOfWork
from storage.records import (
    ItemRecord,
    QueueChoices,
    ReviewerRecord,
    RevisionRecord,
    WebSessionRecord,
)

__all__ = [
    "ReviewQueueRepository",
    "ReviewStore",
    "ReviewUnitOfWork",
    "ReviewerRepository",
    "RevisionRepository",
    "WebSessionRepository",
]


class ReviewQueueRepository(ReviewRepository, Protocol):
    """The review queue, a page at a time, and the search for corrected recordings."""

    def queue_page(
        self,
        *,
        language: str | None = None,
        flag: str | None = None,
        after: tuple[datetime, int] | None = None,
        limit: int = 50,
    ) -> list[ItemRecord]:
        """A page of the review queue, oldest first, after the (updated_at, id) `after`."""
        ...

    def queue_choices(self) -> QueueChoices:
        """The languages and flags of the recordings waiting for review, sorted."""
        ...

    def corrected_count(self) -> int:
        """How many recordings carry a reviewer's version instead of the machine's."""
        ...

    def search_items(self, term: str, *, limit: int = 50) -> list[ItemRecord]:
        """Recordings with a transcript whose source URI holds `term`."""
        ...


class ReviewerRepository(Protocol):
    """Accounts of the review workstation (hashes in, never passwords)."""

    def add_reviewer(self, *, name: str, role: str, password_hash: str) -> ReviewerRecord:
        """Create an account; raises ReviewerInvalid when the name is taken."""
        ...

    def get_reviewer(self, name: str) -> ReviewerRecord | None:
        """One account by name."""
        ...

    def find_reviewer(self, folded_name: str) -> ReviewerRecord | None:
        """The account whose name folds to `folded_name` (exact spelling preferred)."""
        ...

    def password_hash(self, name: str) -> str | None:
        """The stored hash of an account's password (for verification only)."""
        ...

    def list_reviewers(self) -> list[ReviewerRecord]:
        """Every account, by name."""
        ...

    def set_password_hash(self, name: str, password_hash: str) -> None:
        """Replace an account's hash."""
        ...

    def set_disabled(self, name: str, *, disabled: bool) -> ReviewerRecord:
        """Disable (or enable) an account and end its sessions."""
        ...

    def unlock(self, name: str) -> ReviewerRecord:
        """Forget an account's failed attempts and lock."""
        ...

    def record_failure(self, name: str, *, max_failures: int, lockout_s: float) -> ReviewerRecord:
        """One more wrong password; the `max_failures`-th locks the account for `lockout_s`."""
        ...

    def record_success(self, name: str) -> ReviewerRecord:
        """A right password outside a lock: the failed count starts again."""
        ...

    def now(self) -> datetime:
        """The store's clock."""
        ...


class WebSessionRepository(Protocol):
    """Signed-in browsers, by the sha256 of their cookie id."""

    def start_session(
        self, *, id_sha256: str, reviewer_id: int, csrf_token: str, idle_s: float
    ) -> None:
        """Record a new session that ends after `idle_s` without a request."""
        ...

    def touch_session(self, id_sha256: str, *, idle_s: float) -> WebSessionRecord | None:
        """The live session (idle time restarted), or None."""
        ...

    def end_session(self, id_sha256: str) -> None:
        """Forget a session."""
        ...


class RevisionRepository(Protocol):
    """Reviewers' edits of transcripts; the machine's text is never overwritten."""

    def list_revisions(self, item: ItemRecord) -> list[RevisionRecord]:
        """The revisions of the item's current machine text, oldest first."""
        ...

    def latest_revision(self, item: ItemRecord) -> RevisionRecord | None:
        """The newest revision of the item's current machine text, if any."""
        ...

    def add_revision(
        self, item_id: int, *, text: str, author: str, base_revision: int, kind: str
    ) -> RevisionRecord:
        """Save an edit made on `base_revision`; raises StaleRevision or NotEditable."""
        ...

    def require_latest(self, item_id: int, *, base_revision: int) -> RevisionRecord | None:
        """The latest revision when `base_revision` is it; raises StaleRevision otherwise."""
        ...

    def sign_off(self, revision: RevisionRecord) -> ItemRecord:
        """Make a final revision the transcript's current version (status done)."""
        ...


class ReviewUnitOfWork(UnitOfWork, Protocol):
    """One transaction's repositories, the review parts included (the items' three as
    UnitOfWork declares them)."""

    @property
    def chunks(self) -> ChunkRepository:
        """Chunks of recordings (a transcript's segments)."""
        ...

    @property
    def reviews(self) -> ReviewQueueRepository:
        """Items waiting for a person."""
        ...

    @property
    def reviewers(self) -> ReviewerRepository:
        """Accounts of the review workstation."""
        ...

    @property
    def revisions(self) -> RevisionRepository:
        """Reviewers' edits of transcripts."""
        ...

    @property
    def web_sessions(self) -> WebSessionRepository:
        """Signed-in browsers."""
        ...


class ReviewStore(Protocol):
    """An opened store whose units of work include the review parts."""

    def unit_of_work(self, *, read_only: bool = False) -> AbstractContextManager[ReviewUnitOfWork]:
        """A unit of work on a fresh transaction; raises StoreUnavailable or StoreFailed."""
        ...

    def dispose(self) -> None:
        """Close every pooled connection."""
        ...
