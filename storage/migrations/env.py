"""Alembic environment: runs on the connection handed over by storage.database.

medasr configures Alembic programmatically: `upgrade_database()` opens a transaction
on its own engine (SQLite: BEGIN IMMEDIATE; PostgreSQL: an advisory lock, so two
processes never migrate at once) and passes the connection in `config.attributes`.
For writing new revisions by hand:
`alembic -c storage/alembic.ini -x url=sqlite:///dev.db revision --autogenerate -m "..."`.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy.engine import Connection

from storage.models import Base


def run_migrations(connection: Connection) -> None:
    """Run the pending migrations inside the caller's transaction."""
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_from_command_line() -> None:
    """The `alembic` command: the database URL comes from `-x url=...`."""
    from storage.database import create_store_engine

    url = context.get_x_argument(as_dictionary=True).get("url")
    if not url:
        raise SystemExit("pass the database with -x url=..., or use `medasr db upgrade`")
    engine = create_store_engine(url)
    try:
        with engine.begin() as connection:
            run_migrations(connection)
    finally:
        engine.dispose()


if context.is_offline_mode():
    raise SystemExit("medasr migrations run online only: use `medasr db upgrade`")
handed_over = context.config.attributes.get("connection")
if handed_over is None:
    run_from_command_line()
else:
    run_migrations(handed_over)
