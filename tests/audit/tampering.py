"""Raw SQL on the trail, as someone with write access to the database would run it."""

from __future__ import annotations

from sqlalchemy import create_engine, text

from storage.database import normalize_database_url


def tamper(database_url: str, *statements: str, params: dict[str, object] | None = None) -> None:
    """Lift the append-only triggers, run `statements`, put the triggers back."""
    url = normalize_database_url(database_url)
    engine = create_engine(url)
    try:
        with engine.begin() as connection:
            postgresql = connection.dialect.name == "postgresql"
            if postgresql:
                connection.execute(text("ALTER TABLE audit_events DISABLE TRIGGER USER"))
            else:
                connection.execute(text("DROP TRIGGER audit_events_no_update"))
                connection.execute(text("DROP TRIGGER audit_events_no_delete"))
            for statement in statements:
                connection.execute(text(statement), params or {})
            if postgresql:
                connection.execute(text("ALTER TABLE audit_events ENABLE TRIGGER USER"))
    finally:
        engine.dispose()


def run_sql(database_url: str, statement: str) -> None:
    """One statement as it is, triggers and all."""
    engine = create_engine(normalize_database_url(database_url))
    try:
        with engine.begin() as connection:
            connection.execute(text(statement))
    finally:
        engine.dispose()
