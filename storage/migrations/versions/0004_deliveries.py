"""Delivery into the patient record: a deliveries table and per-recording metadata.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23 00:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TIMESTAMP = sa.DateTime(timezone=True)
_STATUSES = "'pending', 'processing', 'delivered', 'failed', 'superseded'"


def upgrade() -> None:
    """Add items.metadata and the deliveries table."""
    with op.batch_alter_table("items") as batch:
        batch.add_column(sa.Column("metadata", sa.JSON(), nullable=True))
    op.create_table(
        "deliveries",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("item_id", sa.Integer(), nullable=False),
        sa.Column("language", sa.String(16), nullable=False),
        sa.Column("version", sa.String(64), nullable=False),
        sa.Column("format", sa.String(8), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("retryable", sa.Boolean(), nullable=False),
        sa.Column("error_kind", sa.String(64), nullable=True),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column("lease_owner", sa.String(255), nullable=True),
        sa.Column("lease_expires_at", _TIMESTAMP, nullable=True),
        sa.Column("response", sa.JSON(), nullable=True),
        sa.Column("replaces_id", sa.Integer(), nullable=True),
        sa.Column("created_at", _TIMESTAMP, nullable=False),
        sa.Column("updated_at", _TIMESTAMP, nullable=False),
        sa.Column("delivered_at", _TIMESTAMP, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_deliveries"),
        sa.UniqueConstraint("item_id", "version", name="uq_deliveries_item_id"),
        sa.ForeignKeyConstraint(
            ["item_id"], ["items.id"], name="fk_deliveries_item_id_items", ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["replaces_id"],
            ["deliveries.id"],
            name="fk_deliveries_replaces_id_deliveries",
            ondelete="SET NULL",
        ),
        sa.CheckConstraint(f"status IN ({_STATUSES})", name="ck_deliveries_status"),
    )
    op.create_index("ix_deliveries_status_id", "deliveries", ["status", "id"])


def downgrade() -> None:
    """Drop the deliveries table and items.metadata."""
    op.drop_index("ix_deliveries_status_id", table_name="deliveries")
    op.drop_table("deliveries")
    with op.batch_alter_table("items") as batch:
        batch.drop_column("metadata")
