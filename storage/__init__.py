"""Things at rest: the SQL store behind a unit of work, sources, exports.

`open_store(settings.storage)` is the one way above storage/ to open the store; it
returns a `UnitOfWorkFactory` (storage/interface.py). The concrete classes stay inside.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from config.settings import StorageSettings
    from storage.interface import UnitOfWorkFactory
    from storage.review_interface import ReviewStore

__all__ = ["open_review_store", "open_store"]


def open_store(storage: StorageSettings, *, upgrade: bool = False) -> UnitOfWorkFactory:
    """Open the database (SQLite is migrated on open; `upgrade=True` migrates any).

    Raises DatabaseUrlInvalid, StoreUnavailable, SchemaOutdated or SchemaUnknown.
    """
    from storage.database import Store  # the engine and Alembic load only when a store opens

    return Store.open(storage, upgrade=upgrade)


def open_review_store(storage: StorageSettings) -> ReviewStore:
    """Open the database for the review workstation (its units of work have the review
    parts: storage/review_interface.py). Raises as open_store."""
    from storage.database import Store

    return Store.open(storage)
