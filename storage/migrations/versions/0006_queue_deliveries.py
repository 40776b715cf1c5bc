"""Deliveries on the one work queue: per-claim lease tokens, a target, in_doubt.

`lease_token`: every claim writes its own, every write under it compares it (as items
since 0002). `target`: where a delivery goes ('docs' for every row so far); the
exactly-once key becomes (item, transcript version, target). `remote_id`: what the
receiver named the document. `sending_at`: committed just before a request goes out,
so a row whose answer was never recorded is known to be in doubt (new status).

Revision ID: 0006_queue
Revises: 0005_quickface
Create Date: 2026-11-24 23:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006_queue"
down_revision: str | Sequence[str] | None = "0005_quickface"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TIMESTAMP = sa.DateTime(timezone=True)
_OLD = "'pending', 'processing', 'delivered', 'failed', 'superseded'"
_NEW = _OLD + ", 'in_doubt'"


def upgrade() -> None:
    """Add lease_token, target, remote_id, sending_at; the key gains target; in_doubt."""
    with op.batch_alter_table("deliveries") as batch:
        batch.add_column(sa.Column("lease_token", sa.String(64), nullable=True))
        batch.add_column(sa.Column("target", sa.String(255), nullable=False, server_default="docs"))
        batch.add_column(sa.Column("remote_id", sa.String(255), nullable=True))
        batch.add_column(sa.Column("sending_at", _TIMESTAMP, nullable=True))
        batch.drop_constraint("uq_deliveries_item_id", type_="unique")
        batch.create_unique_constraint("uq_deliveries_item_id", ["item_id", "version", "target"])
        batch.drop_constraint("ck_deliveries_status", type_="check")
        batch.create_check_constraint("ck_deliveries_status", f"status IN ({_NEW})")


def downgrade() -> None:
    """Back to 0004: in-doubt rows become failed (a person must check them)."""
    op.execute("UPDATE deliveries SET status = 'failed' WHERE status = 'in_doubt'")
    with op.batch_alter_table("deliveries") as batch:
        batch.drop_constraint("ck_deliveries_status", type_="check")
        batch.create_check_constraint("ck_deliveries_status", f"status IN ({_OLD})")
        batch.drop_constraint("uq_deliveries_item_id", type_="unique")
        batch.create_unique_constraint("uq_deliveries_item_id", ["item_id", "version"])
        batch.drop_column("sending_at")
        batch.drop_column("remote_id")
        batch.drop_column("target")
        batch.drop_column("lease_token")
