"""The unit of work: one session (one transaction) shared by small repositories.

As in cosmicpython's unit_of_work.py: `with store.unit_of_work() as uow:` opens a
transaction; `uow.items`, `uow.claims`, `uow.item_queries`, `uow.chunks`,
`uow.deliveries`, `uow.delivery_claims`, `uow.runs`, `uow.listings`, `uow.reviews`,
`uow.audit`, `uow.retention` and `uow.accuracy` all work inside it; it commits when the
block ends normally (or at `uow.commit()`) and rolls back on an error.
storage/interface.py gives each part its Protocol. A savepoint lets many callers share
one transaction (tasks/work/group_commit.py): one caller's error rolls back its own
writes only.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy.exc import DBAPIError, OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session

from storage.accuracy_figures import AccuracyFigures
from storage.audit_log import AuditLog
from storage.chunks import Chunks
from storage.claims import Claims
from storage.deliveries import Deliveries
from storage.delivery_claims import DeliveryClaims
from storage.errors import StoreFailed, StoreUnavailable
from storage.items import Items
from storage.listings import Listings
from storage.queries import ItemQueries
from storage.retention import Retention
from storage.reviewer_accounts import Reviewers, WebSessions
from storage.reviews import Reviews
from storage.revisions import Revisions
from storage.runs import Runs
from storage.spend import Spend


class SqlUnitOfWork:
    """The repositories of one transaction on the SQL store."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self.items = Items(session)
        self.claims = Claims(session)
        self.item_queries = ItemQueries(session)
        self.chunks = Chunks(session)
        self.deliveries = Deliveries(session)
        self.delivery_claims = DeliveryClaims(session)
        self.runs = Runs(session)
        self.listings = Listings(session)
        self.reviews = Reviews(session)
        self.reviewers = Reviewers(session)
        self.revisions = Revisions(session)
        self.web_sessions = WebSessions(session)
        self.audit = AuditLog(session)
        self.retention = Retention(session)
        self.accuracy = AccuracyFigures(session)
        self.spend = Spend(session)

    def commit(self) -> None:
        """Commit now (e.g. after each chunk); the next statement starts a new transaction."""
        self._session.commit()

    @contextmanager
    def savepoint(self) -> Iterator[None]:
        """A SAVEPOINT: an error in the block rolls back the block's writes only (and is
        raised, translated). Raises StoreUnavailable or StoreFailed."""
        with translate_store_errors(), self._session.begin_nested():
            yield


@contextmanager
def translate_store_errors() -> Iterator[None]:
    """Turn SQLAlchemy errors into StoreUnavailable (transient) or StoreFailed, once."""
    try:
        yield
    except OperationalError as exc:
        raise StoreUnavailable(f"database unavailable: {_describe(exc)}") from exc
    except DBAPIError as exc:
        raise StoreFailed(f"database refused a statement: {_describe(exc)}") from exc
    except SQLAlchemyError as exc:
        raise StoreFailed(f"database error: {type(exc).__name__}") from exc


def _describe(exc: DBAPIError) -> str:
    # Only the driver's first line: the full text carries the statement and its
    # parameters, which may hold transcript text.
    original = exc.orig
    first_line = str(original).strip().splitlines()[0] if str(original).strip() else ""
    return f"{type(original).__name__}: {first_line[:300]}"
