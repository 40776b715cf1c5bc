"""What the database does with a repository call's queries (EXPLAIN), and statistics upkeep.

`explain_call` runs a repository call in a transaction it rolls back, records every
statement the call sends, and returns the database's plan for each: SQLite's EXPLAIN
QUERY PLAN lines, PostgreSQL's EXPLAIN lines. Tests use it to refuse a per-file query
that scans the items table; bench/query_bench.py prints the plans of the commands.

`refresh_statistics` keeps the planner's statistics current: SQLite never gathers them
by itself (without them it may pick the wrong index as the store grows), PostgreSQL's
autovacuum does so only after a while; both are refreshed after registration and at the
end of a run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, event
from sqlalchemy.orm import Session

from storage.database import Store
from storage.interface import UnitOfWork, UnitOfWorkFactory
from storage.unit_of_work import SqlUnitOfWork, translate_store_errors

# Rows SQLite's ANALYZE samples per index: statistics in milliseconds at 10^6 rows,
# good enough to tell a selective index from a broad one.
SQLITE_ANALYSIS_LIMIT = 1000


@dataclass(frozen=True)
class QueryPlan:
    """One statement a repository call sent, and the database's plan for it."""

    statement: str
    plan: tuple[str, ...]  # one line per step, as the database words it

    def text(self) -> str:
        """The plan on one line per step, for a message or a README."""
        return "\n".join(self.plan)


def explain_call(
    store: Store, call: Callable[[UnitOfWork], Any], *, settings: tuple[str, ...] = ()
) -> list[QueryPlan]:
    """Plans of the statements `call` sends, in order; nothing it writes is kept.

    `settings` are run first on the same connection (e.g. PostgreSQL's "SET LOCAL
    enable_seqscan = off" to ask what an index can do on a small table).
    Raises StoreError kinds.
    """
    sent: list[tuple[str, Any]] = []

    def record(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        sent.append((statement, parameters))

    with translate_store_errors(), store.engine.connect() as connection:
        transaction = connection.begin()
        try:
            for setting in settings:
                connection.exec_driver_sql(setting)
            event.listen(connection, "before_cursor_execute", record)
            try:
                result = call(SqlUnitOfWork(Session(bind=connection)))
                if hasattr(result, "__next__"):
                    next(result, None)  # a streamed query runs when first read
            finally:
                event.remove(connection, "before_cursor_execute", record)
            return [_plan(connection, statement, parameters) for statement, parameters in sent]
        finally:
            transaction.rollback()


def _plan(connection: Connection, statement: str, parameters: Any) -> QueryPlan:
    sqlite = connection.dialect.name == "sqlite"
    prefix = "EXPLAIN QUERY PLAN " if sqlite else "EXPLAIN "
    rows = connection.exec_driver_sql(prefix + statement, parameters).all()
    lines = tuple(str(row[-1]) if sqlite else str(row[0]) for row in rows)
    return QueryPlan(statement=" ".join(statement.split()), plan=lines)


def refresh_statistics(store: UnitOfWorkFactory) -> None:
    """Bring the planner's statistics up to date (SQLite: a sampled ANALYZE; PostgreSQL:
    ANALYZE of the items table). Cheap at 10^6 rows. Raises StoreError kinds.

    A store that is not the SQL store (the unit tests' fake) has no planner: no-op.
    """
    if not isinstance(store, Store):
        return
    with translate_store_errors(), store.engine.connect() as connection:
        if connection.dialect.name == "sqlite":
            connection.exec_driver_sql(f"PRAGMA analysis_limit = {SQLITE_ANALYSIS_LIMIT}")
            connection.exec_driver_sql("ANALYZE")
            connection.exec_driver_sql("PRAGMA optimize")
        else:
            connection.exec_driver_sql("ANALYZE items")
        connection.commit()
