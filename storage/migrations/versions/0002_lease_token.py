"""Each claim has its own token: items.lease_token.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23 00:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add items.lease_token; items claimed before it hold no token and wait out their lease."""
    op.add_column("items", sa.Column("lease_token", sa.String(64), nullable=True))


def downgrade() -> None:
    """Drop items.lease_token (SQLite 3.35+ and PostgreSQL drop a column in place)."""
    op.drop_column("items", "lease_token")
