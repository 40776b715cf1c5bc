"""Quality gate: the needs_review status and the items' flags.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23 00:00:00

SQLite cannot alter a CHECK constraint: batch mode copies the table (the named
constraint is reflected, dropped and recreated); PostgreSQL alters it in place.
Downgrading turns needs_review items into permanent failures (kind needs_review),
so an older medasr never treats a transcript nobody accepted as done.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_OLD_STATUSES = "'pending', 'processing', 'done', 'failed', 'skipped'"
_NEW_STATUSES = "'pending', 'processing', 'done', 'needs_review', 'failed', 'skipped'"


def upgrade() -> None:
    """Allow needs_review and add items.flags."""
    with op.batch_alter_table("items") as batch:
        batch.add_column(sa.Column("flags", sa.JSON(), nullable=True))
        batch.drop_constraint("ck_items_status", type_="check")
        batch.create_check_constraint("ck_items_status", f"status IN ({_NEW_STATUSES})")


def downgrade() -> None:
    """needs_review items become permanent failures; drop items.flags."""
    items = sa.table(
        "items",
        sa.column("status", sa.String),
        sa.column("error_kind", sa.String),
        sa.column("error_message", sa.Text),
        sa.column("retryable", sa.Boolean),
    )
    op.execute(
        items.update()
        .where(items.c.status == "needs_review")
        .values(
            status="failed",
            error_kind="needs_review",
            error_message="flagged by the quality gate and not yet reviewed",
            retryable=False,
        )
    )
    with op.batch_alter_table("items") as batch:
        batch.drop_constraint("ck_items_status", type_="check")
        batch.create_check_constraint("ck_items_status", f"status IN ({_OLD_STATUSES})")
        batch.drop_column("flags")
