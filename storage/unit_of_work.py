"""The unit of work: one session (one transaction) shared by five small repositories.

As in cosmicpython's unit_of_work.py: `with store.unit_of_work() as uow:` opens a
transaction; `uow.items`, `uow.chunks`, `uow.deliveries`, `uow.runs` and `uow.reviews`
all work inside it; it commits when the block ends normally (or at `uow.commit()`) and
rolls back on an error. storage/interface.py gives each part its Protocol.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from storage.chunks import Chunks
from storage.deliveries import Deliveries
from storage.items import Items
from storage.reviews import Reviews
from storage.runs import Runs


class SqlUnitOfWork:
    """The repositories of one transaction on the SQL store."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self.items = Items(session)
        self.chunks = Chunks(session)
        self.deliveries = Deliveries(session)
        self.runs = Runs(session)
        self.reviews = Reviews(session)

    def commit(self) -> None:
        """Commit now (e.g. after each chunk); the next statement starts a new transaction."""
        self._session.commit()
