"""A note's version filed again: one row per (item, version, target, filing).

A version the receiver held once can become the note again after another version
replaced it (a correction undone, a file restored to its earlier content). It is then
filed again as the replacement of the version the receiver holds, under identifiers of
its own: `filing` counts the times one version went to one target (0 the first), and
the exactly-once key becomes (item, transcript version, target, filing).

Revision ID: 0013_refiling
Revises: 0012_not_audio_files
Create Date: 2026-12-02 01:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013_refiling"
down_revision: str | Sequence[str] | None = "0012_not_audio_files"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add `filing` (0 for every row so far); the key gains it."""
    with op.batch_alter_table("deliveries") as batch:
        batch.add_column(sa.Column("filing", sa.Integer(), nullable=False, server_default="0"))
        batch.drop_constraint("uq_deliveries_item_id", type_="unique")
        batch.create_unique_constraint(
            "uq_deliveries_item_id", ["item_id", "version", "target", "filing"]
        )


def downgrade() -> None:
    """Back to 0012: rows of a second filing go (the first filing of each version stays)."""
    op.execute("DELETE FROM deliveries WHERE filing > 0")
    with op.batch_alter_table("deliveries") as batch:
        batch.drop_constraint("uq_deliveries_item_id", type_="unique")
        batch.create_unique_constraint("uq_deliveries_item_id", ["item_id", "version", "target"])
        batch.drop_column("filing")
