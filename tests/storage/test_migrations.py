"""Alembic owns the schema: up from empty, down to base, up again; models match it."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

from config.settings import StorageSettings
from storage import open_store
from storage.database import (
    create_store_engine,
    downgrade_database,
    head_revision,
    upgrade_database,
)
from storage.errors import SchemaUnknown
from storage.models import Base
from storage.schema_revision import newest_known_revision

TABLES = {
    "items",
    "chunks",
    "runs",
    "deliveries",
    "audit_events",
    "reviewers",
    "note_accuracy",
    "revisions",
    "web_sessions",
    "store_identity",
    "listed_sources",
    "not_audio_files",
}


def tables_of(url: str) -> set[str]:
    engine = create_store_engine(url)
    try:
        return set(inspect(engine).get_table_names()) - {"alembic_version"}
    finally:
        engine.dispose()


def test_upgrade_downgrade_upgrade(store_url: str) -> None:
    assert tables_of(store_url) == set()
    assert upgrade_database(store_url) == head_revision()
    assert tables_of(store_url) == TABLES
    assert upgrade_database(store_url) == head_revision()  # idempotent
    assert downgrade_database(store_url, revision="base") == "base"
    assert tables_of(store_url) == set()
    assert upgrade_database(store_url) == head_revision()
    assert tables_of(store_url) == TABLES


def test_models_match_the_migrations(store_url: str) -> None:
    upgrade_database(store_url)
    engine = create_store_engine(store_url)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"compare_type": True})
            differences = compare_metadata(context, Base.metadata)
    finally:
        engine.dispose()
    assert differences == []


def test_a_database_from_a_newer_medasr_is_refused_not_touched(store_url: str) -> None:
    upgrade_database(store_url)
    engine = create_store_engine(store_url)
    try:
        with engine.begin() as connection:
            connection.exec_driver_sql("UPDATE alembic_version SET version_num = 'ffff9999'")
    finally:
        engine.dispose()

    for attempt in (
        lambda: upgrade_database(store_url),
        lambda: open_store(StorageSettings(database_url=store_url)),
    ):
        with pytest.raises(SchemaUnknown, match="ffff9999, which this medasr does not know"):
            attempt()


def test_the_newest_revision_read_without_alembic_is_alembics() -> None:
    assert newest_known_revision() == head_revision()
