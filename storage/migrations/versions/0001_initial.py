"""Initial schema: items, chunks, runs.

Revision ID: 0001
Revises:
Create Date: 2025-01-01 00:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    """Create items, chunks and runs."""
    op.create_table(
        "items",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("source_uri", sa.Text(), nullable=False),
        sa.Column("language", sa.String(16), nullable=False),
        sa.Column("source_version", sa.String(255), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=True),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("duration_ms", sa.BigInteger(), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("error_kind", sa.String(64), nullable=True),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column("retryable", sa.Boolean(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", _TIMESTAMP, nullable=True),
        sa.Column("lease_owner", sa.String(255), nullable=True),
        sa.Column("lease_expires_at", _TIMESTAMP, nullable=True),
        sa.Column("text", sa.Text(), nullable=True),
        sa.Column("extras", sa.JSON(), nullable=True),
        sa.Column("chunk_count", sa.Integer(), nullable=True),
        sa.Column("created_at", _TIMESTAMP, nullable=False),
        sa.Column("updated_at", _TIMESTAMP, nullable=False),
        sa.Column("done_at", _TIMESTAMP, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_items"),
        sa.UniqueConstraint("source_uri", "language", name="uq_items_source_uri"),
        sa.CheckConstraint(
            "status IN ('pending', 'processing', 'done', 'failed', 'skipped')",
            name="ck_items_status",
        ),
    )
    op.create_index("ix_items_status_language", "items", ["status", "language", "id"])
    op.create_index("ix_items_sha256_language", "items", ["sha256", "language"])
    op.create_table(
        "chunks",
        sa.Column("item_id", sa.Integer(), nullable=False),
        sa.Column("index", sa.Integer(), nullable=False),
        sa.Column("start_ms", sa.BigInteger(), nullable=False),
        sa.Column("end_ms", sa.BigInteger(), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("text", sa.Text(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("txn_id", sa.String(255), nullable=True),
        sa.Column("latency_ms", sa.Float(), nullable=True),
        sa.Column("updated_at", _TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("item_id", "index", name="pk_chunks"),
        sa.ForeignKeyConstraint(
            ["item_id"], ["items.id"], name="fk_chunks_item_id_items", ondelete="CASCADE"
        ),
        sa.CheckConstraint("status IN ('done', 'failed', 'silent')", name="ck_chunks_status"),
    )
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("started_at", _TIMESTAMP, nullable=False),
        sa.Column("finished_at", _TIMESTAMP, nullable=True),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("language", sa.String(16), nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        *(
            sa.Column(name, sa.Integer(), nullable=False, server_default="0")
            for name in ("files", "done", "failed", "skipped", "requests", "retries")
        ),
        sa.Column("other_counts", sa.JSON(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_runs"),
    )


def downgrade() -> None:
    """Drop everything the initial revision created."""
    op.drop_table("chunks")
    op.drop_index("ix_items_sha256_language", table_name="items")
    op.drop_index("ix_items_status_language", table_name="items")
    op.drop_table("items")
    op.drop_table("runs")
