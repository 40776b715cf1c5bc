"""Raw SQL against a store's database, for tests that build rows an older schema had."""

from __future__ import annotations

from sqlalchemy import text

from storage.database import create_store_engine


def run_sql(url: str, *statements: str) -> list[tuple[object, ...]]:
    """Run `statements` in one transaction; the rows of those that return any."""
    engine = create_store_engine(url)
    try:
        with engine.begin() as connection:
            found: list[tuple[object, ...]] = []
            for statement in statements:
                result = connection.execute(text(statement))
                if result.returns_rows:
                    found += [tuple(row) for row in result]
            return found
    finally:
        engine.dispose()
