"""Indexes that hold at 10^6 rows: the duplicate-content lookup and the latest by status.

The lookup of a done twin (storage/queries.py find_done_with_sha, once per file inside
the write transaction) finds its row on (sha256, language, status, done_at, id) already
in the order it wants: no sort, no scan of the done rows. It replaces the (sha256,
language) index, its prefix. The latest failed, skipped or needing review (`medasr
status`, `medasr review`) come from (status, updated_at, id) in order; the counts by status and
language with their audio (`medasr status`) are read from (status, language,
duration_ms) alone, never from the table's rows (transcripts included).

Revision ID: 0005_quickface
Revises: 0004
Create Date: 2026-11-24 23:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0005_quickface"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TWIN_INDEX = "ix_items_sha256_language_status_done_at"
LATEST_INDEX = "ix_items_status_updated_at"
COUNTS_INDEX = "ix_items_status_language_duration_ms"


def upgrade() -> None:
    """Add the twin lookup's, the latest-by-status and the counts' indexes; drop the twin's
    old prefix."""
    op.create_index(TWIN_INDEX, "items", ["sha256", "language", "status", "done_at", "id"])
    op.create_index(LATEST_INDEX, "items", ["status", "updated_at", "id"])
    op.create_index(COUNTS_INDEX, "items", ["status", "language", "duration_ms"])
    op.drop_index("ix_items_sha256_language", table_name="items")


def downgrade() -> None:
    """Back to the (sha256, language) index alone."""
    op.create_index("ix_items_sha256_language", "items", ["sha256", "language"])
    op.drop_index(COUNTS_INDEX, table_name="items")
    op.drop_index(LATEST_INDEX, table_name="items")
    op.drop_index(TWIN_INDEX, table_name="items")
