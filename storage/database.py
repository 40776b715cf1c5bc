"""The SQL store's engine and sessions: SQLite (WAL, immediate transactions) or PostgreSQL.

SQLite: the file is created with mode 0600 and upgraded to the newest schema when the
store opens; every write session starts with BEGIN IMMEDIATE (the documented pysqlite
event-hook recipe), so there is one writer at a time and a claim never races. Readers
(`read_only=True`) start a plain BEGIN and, thanks to WAL, do not block writers.
PostgreSQL through psycopg 3: `postgres://` and `postgresql://` are rewritten to
`postgresql+psycopg://`; the schema is upgraded by `medasr db upgrade`, not on open.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import (
    ArgumentError,
    DatabaseError,
    NoSuchModuleError,
)
from sqlalchemy.orm import sessionmaker
from sqlalchemy.pool import StaticPool

from config.private_files import create_private_file
from config.settings import StorageSettings
from storage.errors import (
    DatabaseUrlInvalid,
    SchemaOutdated,
    SchemaUnknown,
    StoreFailed,
)
from storage.schema_revision import newest_known_revision, other_tables, stored_revision
from storage.unit_of_work import SqlUnitOfWork, translate_store_errors

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
_READ_ONLY = "medasr_read_only"
_PURGED_TABLES = "items, chunks, deliveries, revisions, not_audio_files"
_MIGRATION_LOCK_ID = 0x6D656461  # any constant; PostgreSQL migrations take it in turn


class Store:
    """An opened database: hands out units of work, one session (transaction) each.

    Above storage/ it is seen only as a UnitOfWorkFactory (storage.open_store).
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._writer = sessionmaker(engine, expire_on_commit=False)
        self._reader = sessionmaker(
            engine.execution_options(**{_READ_ONLY: True}), expire_on_commit=False
        )

    @classmethod
    def open(cls, storage: StorageSettings, *, upgrade: bool = False) -> Store:
        """Open the database; SQLite (or `upgrade=True`) is migrated to the newest schema.

        Raises DatabaseUrlInvalid, StoreUnavailable, or SchemaOutdated (PostgreSQL behind).
        """
        engine = create_store_engine(storage.database_url, busy_timeout_ms=storage.busy_timeout_ms)
        try:
            with translate_store_errors(), _a_file_that_is_a_database(engine):
                if upgrade or engine.dialect.name == "sqlite":
                    _upgrade_engine(engine)
                else:
                    _require_newest_schema(engine)
        except BaseException:
            engine.dispose()
            raise
        return cls(engine)

    @contextmanager
    def unit_of_work(self, *, read_only: bool = False) -> Iterator[SqlUnitOfWork]:
        """A unit of work on a fresh session; commits on normal exit, rolls back on error.

        Keep the block short: on SQLite a write block holds the one write lock from its
        first statement to its end. Raises StoreUnavailable or StoreFailed.
        """
        session = (self._reader if read_only else self._writer)()
        try:
            with translate_store_errors():
                try:
                    yield SqlUnitOfWork(session)
                    session.commit()
                except BaseException:
                    session.rollback()
                    raise
        finally:
            session.close()

    def reclaim_space(self) -> str:
        """After a purge: SQLite rebuilds the file (VACUUM: no free page keeps old bytes)
        and truncates its write-ahead log to zero; PostgreSQL VACUUMs the purged tables
        (their dead rows' space becomes reusable; the bytes stay on disk until overwritten,
        see docs). Returns what was done. Raises StoreUnavailable or StoreFailed."""
        with translate_store_errors():
            if self.engine.dialect.name == "postgresql":
                autocommit = self.engine.execution_options(isolation_level="AUTOCOMMIT")
                with autocommit.connect() as connection:
                    connection.exec_driver_sql(f"VACUUM (ANALYZE) {_PURGED_TABLES}")
                return f"VACUUM (ANALYZE) {_PURGED_TABLES}"
            raw = self.engine.raw_connection()
            try:
                cursor = raw.cursor()
                cursor.execute("VACUUM")
                cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                cursor.close()
            finally:
                raw.close()
            return "VACUUM and wal_checkpoint(TRUNCATE)"

    def dispose(self) -> None:
        """Close every pooled connection."""
        self.engine.dispose()


_SQLITE_NOTADB = 26  # sqlite3's result code for "file is not a database"


@contextmanager
def _a_file_that_is_a_database(engine: Engine) -> Iterator[None]:
    """An SQLite file that is not a database (text, another format) is the setting's
    fault, said as `medasr run` says it: raises DatabaseUrlInvalid naming the file."""
    try:
        yield
    except DatabaseError as exc:
        if getattr(exc.orig, "sqlite_errorcode", None) != _SQLITE_NOTADB:
            raise
        raise DatabaseUrlInvalid(
            f"MEDASR_DATABASE_URL: {engine.url.database} is not an SQLite database: point "
            "MEDASR_DATABASE_URL at medasr's database, or move the file away"
        ) from exc


def normalize_database_url(database_url: str) -> URL:
    """Parse a database URL; PostgreSQL URLs are pointed at psycopg 3. Raises DatabaseUrlInvalid."""
    try:
        url = make_url(database_url)
    except ArgumentError as exc:
        raise DatabaseUrlInvalid("MEDASR_DATABASE_URL is not a valid database URL") from exc
    except ValueError as exc:  # SQLAlchemy's int() of the port
        raise DatabaseUrlInvalid(
            "MEDASR_DATABASE_URL is not a valid database URL: its port is not a number"
        ) from exc
    if url.drivername in ("postgres", "postgresql"):
        url = url.set(drivername="postgresql+psycopg")
    backend = url.get_backend_name()
    if backend not in ("sqlite", "postgresql"):
        raise DatabaseUrlInvalid(
            f"MEDASR_DATABASE_URL: unsupported database {backend!r} (use sqlite or postgresql)"
        )
    return url


def database_exists(database_url: str) -> bool:
    """False only for an SQLite file that is not there yet (a server database may exist)."""
    url = normalize_database_url(database_url)
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return True
    return Path(url.database).exists()


def create_store_engine(database_url: str, *, busy_timeout_ms: int = 30_000) -> Engine:
    """An engine with medasr's connection setup (SQLite file 0600, WAL, busy timeout, hooks)."""
    url = normalize_database_url(database_url)
    try:
        if url.get_backend_name() == "sqlite":
            return _create_sqlite_engine(url, busy_timeout_ms=busy_timeout_ms)
        return create_engine(url, pool_pre_ping=True)
    except (NoSuchModuleError, ImportError) as exc:
        raise DatabaseUrlInvalid(
            f"MEDASR_DATABASE_URL: driver {url.drivername!r} is not installed"
        ) from exc


def _create_sqlite_engine(url: URL, *, busy_timeout_ms: int) -> Engine:
    database = url.database or ""
    in_memory = database in ("", ":memory:") or database.startswith("file:")
    if in_memory:
        engine = create_engine(url, poolclass=StaticPool, connect_args={"check_same_thread": False})
    else:
        _create_private_file(Path(database))
        engine = create_engine(url, connect_args={"timeout": busy_timeout_ms / 1000})

    @event.listens_for(engine, "connect")
    def _configure(dbapi_connection: Any, _record: Any) -> None:
        # Take BEGIN away from pysqlite so that the "begin" hook below decides its kind.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        cursor.execute("PRAGMA foreign_keys = ON")
        if not in_memory:
            cursor.execute("PRAGMA journal_mode = WAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(connection: Any) -> None:
        read_only = connection.get_execution_options().get(_READ_ONLY, False)
        connection.exec_driver_sql("BEGIN" if read_only else "BEGIN IMMEDIATE")

    return engine


def _create_private_file(path: Path) -> None:
    """Create the SQLite file with mode 0600 if missing (WAL and shm files inherit it)."""
    if path.exists():
        return
    if not path.parent.is_dir():
        raise DatabaseUrlInvalid(f"MEDASR_DATABASE_URL: folder {path.parent} does not exist")
    try:
        descriptor = create_private_file(path)
    except FileExistsError:
        return  # another process created it first
    except OSError as exc:
        raise DatabaseUrlInvalid(
            f"MEDASR_DATABASE_URL: cannot create {path}: {exc.strerror}"
        ) from exc
    os.close(descriptor)


# --- migrations ------------------------------------------------------------------------


def _alembic_config() -> Config:
    from alembic.config import Config  # Alembic only when the schema is not the newest

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


def head_revision() -> str:
    """The newest schema revision this program knows."""
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(_alembic_config()).get_current_head()
    assert head is not None
    return head


def current_revision(engine: Engine) -> str | None:
    """The schema revision the database is at (None for an empty database).

    Read on a read-only connection: on SQLite a plain BEGIN, not BEGIN IMMEDIATE, so
    opening the store (`medasr status`, export) never waits behind a writer.
    """
    from alembic.runtime.migration import MigrationContext

    with engine.execution_options(**{_READ_ONLY: True}).connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def _at_newest_schema(engine: Engine) -> bool:
    """True when the database is at the newest revision, asked without Alembic; False
    when it is not, or when only Alembic can tell."""
    newest = newest_known_revision()
    if newest is None:
        return False
    with engine.execution_options(**{_READ_ONLY: True}).connect() as connection:
        return stored_revision(connection) == newest


def _upgrade_engine(engine: Engine, revision: str = "head") -> None:
    if revision == "head" and _at_newest_schema(engine):
        return
    from alembic import command

    current = current_revision(engine)
    _refuse_unknown_revision(current)
    if current is None:
        _refuse_other_tables(engine)
    if revision == "head" and current == head_revision():
        return
    _run_alembic(engine, lambda config: command.upgrade(config, revision))


def _refuse_other_tables(engine: Engine) -> None:
    """DatabaseUrlInvalid for a database holding tables but no revision: another
    program's, or a schema made without migrations; nothing is added to it."""
    with engine.execution_options(**{_READ_ONLY: True}).connect() as connection:
        held = other_tables(connection)
    if held:
        shown = ", ".join(held[:3]) + (", ..." if len(held) > 3 else "")
        raise DatabaseUrlInvalid(
            f"MEDASR_DATABASE_URL names a database that holds other tables ({shown}) and no "
            "medasr schema; nothing was changed: name a medasr store or an empty database"
        )


def _run_alembic(engine: Engine, action: Any) -> None:
    config = _alembic_config()
    with engine.connect() as connection:
        sqlite = connection.dialect.name == "sqlite"
        if sqlite:
            # Batch mode copies a table and drops the old one; with foreign keys on, SQLite's
            # implicit DELETE of that DROP cascades into every row that refers to it (chunks,
            # deliveries). The pragma is a no-op inside a transaction: set it before BEGIN.
            _set_sqlite_foreign_keys(connection, enabled=False)
        try:
            # One transaction around the whole migration: atomic, and serialized across processes.
            with connection.begin():
                if connection.dialect.name == "postgresql":
                    connection.exec_driver_sql(
                        f"SELECT pg_advisory_xact_lock({_MIGRATION_LOCK_ID})"
                    )
                config.attributes["connection"] = connection
                action(config)
                if sqlite:
                    _refuse_dangling_references(connection)
        finally:
            if sqlite:
                _set_sqlite_foreign_keys(connection, enabled=True)


def _set_sqlite_foreign_keys(connection: Connection, *, enabled: bool) -> None:
    # On the driver's connection: SQLAlchemy's own execute would BEGIN first.
    dbapi = connection.connection.driver_connection
    assert dbapi is not None
    dbapi.execute(f"PRAGMA foreign_keys = {'ON' if enabled else 'OFF'}")


def _refuse_dangling_references(connection: Connection) -> None:
    """With foreign keys off, check them before COMMIT: a migration must not orphan a row."""
    dangling = connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
    if dangling:
        table, _rowid, parent, _fk = dangling[0]
        raise StoreFailed(
            f"the schema upgrade would leave {len(dangling)} row(s) of {table} without their "
            f"{parent} row; nothing was changed"
        )


def _refuse_unknown_revision(current: str | None) -> None:
    """Raise SchemaUnknown when the database is at a revision no migration here defines."""
    if current is None:
        return
    from alembic.script import ScriptDirectory
    from alembic.util.exc import CommandError as AlembicCommandError

    try:
        ScriptDirectory.from_config(_alembic_config()).get_revision(current)
    except AlembicCommandError as exc:
        raise SchemaUnknown(
            f"the database schema is at revision {current}, which this medasr does not know "
            f"(its newest is {head_revision()}): a newer medasr migrated it; use that version"
        ) from exc


def _require_newest_schema(engine: Engine) -> None:
    if _at_newest_schema(engine):
        return
    current, head = current_revision(engine), head_revision()
    _refuse_unknown_revision(current)
    if current != head:
        raise SchemaOutdated(
            f"the database schema is at revision {current or 'none'}, this medasr needs {head}: "
            "run `medasr db upgrade`"
        )


def upgrade_database(
    database_url: str, *, revision: str = "head", busy_timeout_ms: int = 30_000
) -> str:
    """Upgrade the schema to `revision`; returns the revision reached. Raises StoreError kinds."""
    engine = create_store_engine(database_url, busy_timeout_ms=busy_timeout_ms)
    try:
        with translate_store_errors(), _a_file_that_is_a_database(engine):
            newest = newest_known_revision()
            if revision == "head" and newest is not None and _at_newest_schema(engine):
                return newest  # nothing to migrate: Alembic stays unloaded
            _upgrade_engine(engine, revision)
            return current_revision(engine) or "base"
    finally:
        engine.dispose()


def downgrade_database(database_url: str, *, revision: str = "base") -> str:
    """Downgrade the schema to `revision` (for tests and rollbacks); returns where it is."""
    from alembic import command

    engine = create_store_engine(database_url)
    try:
        with translate_store_errors():
            _run_alembic(engine, lambda config: command.downgrade(config, revision))
            return current_revision(engine) or "base"
    finally:
        engine.dispose()
