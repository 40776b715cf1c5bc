"""The review workstation: reviewers, revisions of transcripts, web sessions.

`items.machine_text` keeps the machine's text once a reviewer's finalized version has
replaced it in `items.text` (what export and delivery read); NULL means `text` is still
the machine's own.

Revision ID: 0010_review
Revises: 0009_audit
Create Date: 2026-11-27 07:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010_review"
down_revision: str | Sequence[str] | None = "0009_audit"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    """Add items.machine_text and the reviewers, revisions and web_sessions tables."""
    with op.batch_alter_table("items") as batch:
        batch.add_column(sa.Column("machine_text", sa.Text(), nullable=True))
    op.create_table(
        "reviewers",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("password_hash", sa.String(255), nullable=False),
        sa.Column("failed_count", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("locked_until", _TIMESTAMP, nullable=True),
        sa.Column("disabled", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("created_at", _TIMESTAMP, nullable=False),
        sa.UniqueConstraint("name", name="uq_reviewers_name"),
        sa.CheckConstraint("role IN ('reviewer', 'admin')", name="ck_reviewers_role"),
    )
    op.create_table(
        "revisions",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "item_id",
            sa.Integer(),
            sa.ForeignKey("items.id", ondelete="CASCADE", name="fk_revisions_item_id_items"),
            nullable=False,
        ),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("author", sa.String(64), nullable=False),
        sa.Column("created_at", _TIMESTAMP, nullable=False),
        sa.Column("base_revision", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("machine_sha256", sa.String(64), nullable=False),
        sa.UniqueConstraint("item_id", "number", name="uq_revisions_item_id"),
        sa.CheckConstraint("kind IN ('draft', 'final')", name="ck_revisions_kind"),
    )
    op.create_table(
        "web_sessions",
        sa.Column("id_sha256", sa.String(64), primary_key=True),
        sa.Column(
            "reviewer_id",
            sa.Integer(),
            sa.ForeignKey(
                "reviewers.id", ondelete="CASCADE", name="fk_web_sessions_reviewer_id_reviewers"
            ),
            nullable=False,
        ),
        sa.Column("csrf_token", sa.String(64), nullable=False),
        sa.Column("created_at", _TIMESTAMP, nullable=False),
        sa.Column("last_seen", _TIMESTAMP, nullable=False),
        sa.Column("expires_at", _TIMESTAMP, nullable=False),
    )


def downgrade() -> None:
    """Drop the review tables and items.machine_text (the current text stays in text)."""
    op.drop_table("web_sessions")
    op.drop_table("revisions")
    op.drop_table("reviewers")
    with op.batch_alter_table("items") as batch:
        batch.drop_column("machine_text")
