"""The audit trail: one append-only table of events, each chained to the one before.

`seq` is given by the writer (the previous event's + 1, under a lock that serializes
appends), `prev_hash` is the previous event's `hash`, and `hash` covers the event's
content and `prev_hash` (storage/audit_chain.py). No foreign key to items: the trail
outlives every row it names. Triggers refuse UPDATE and DELETE: a speed bump for
mistakes, not a defence against someone who can drop them (the chain and its anchor
are that).

Items gain the status `purged` (`medasr purge`: the patient data is gone, the row, its
key and its fingerprints stay, so the recording is never bought or filed again). SQLite
cannot alter a CHECK constraint: batch mode copies the items table.

Revision ID: 0009_audit
Revises: 0006_queue
Create Date: 2026-11-27 07:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009_audit"
down_revision: str | Sequence[str] | None = "0006_queue"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_REFUSAL = "audit_events is append-only"
_OLD_STATUSES = "'pending', 'processing', 'done', 'needs_review', 'failed', 'skipped'"
_NEW_STATUSES = _OLD_STATUSES + ", 'purged'"


def upgrade() -> None:
    """Create audit_events, its indexes, and the triggers that refuse UPDATE and DELETE."""
    op.create_table(
        "audit_events",
        sa.Column("seq", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("occurred_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("actor", sa.String(255), nullable=False),
        sa.Column("action", sa.String(32), nullable=False),
        sa.Column("item_id", sa.BigInteger(), nullable=True),
        sa.Column("path", sa.Text(), nullable=True),
        sa.Column("target", sa.Text(), nullable=True),
        sa.Column("detail", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("prev_hash", sa.String(64), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("seq", name="pk_audit_events"),
        sa.UniqueConstraint("hash", name="uq_audit_events_hash"),
    )
    op.create_index("ix_audit_events_occurred_at", "audit_events", ["occurred_at", "seq"])
    op.create_index("ix_audit_events_item_id", "audit_events", ["item_id", "seq"])
    if op.get_bind().dialect.name == "postgresql":
        _postgresql_triggers()
    else:
        _sqlite_triggers()
    with op.batch_alter_table("items") as batch:
        batch.drop_constraint("ck_items_status", type_="check")
        batch.create_check_constraint("ck_items_status", f"status IN ({_NEW_STATUSES})")


def _sqlite_triggers() -> None:
    for verb in ("UPDATE", "DELETE"):
        op.execute(
            f"CREATE TRIGGER audit_events_no_{verb.lower()} BEFORE {verb} ON audit_events "
            f"BEGIN SELECT RAISE(ABORT, '{_REFUSAL}'); END"
        )


def _postgresql_triggers() -> None:
    op.execute(
        "CREATE FUNCTION audit_events_refuse() RETURNS trigger LANGUAGE plpgsql AS "
        f"$$ BEGIN RAISE EXCEPTION '{_REFUSAL}'; END $$"
    )
    op.execute(
        "CREATE TRIGGER audit_events_append_only BEFORE UPDATE OR DELETE ON audit_events "
        "FOR EACH ROW EXECUTE FUNCTION audit_events_refuse()"
    )
    op.execute(
        "CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON audit_events "
        "FOR EACH STATEMENT EXECUTE FUNCTION audit_events_refuse()"
    )


def downgrade() -> None:
    """Drop the trail (a downgrade loses it: export it first with `medasr audit`); purged
    items become skipped with the reason `purged` (their text is gone either way)."""
    op.execute("UPDATE items SET status = 'skipped', error_kind = 'purged' WHERE status = 'purged'")
    with op.batch_alter_table("items") as batch:
        batch.drop_constraint("ck_items_status", type_="check")
        batch.create_check_constraint("ck_items_status", f"status IN ({_OLD_STATUSES})")
    op.drop_table("audit_events")
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION IF EXISTS audit_events_refuse()")
