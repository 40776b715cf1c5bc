"""Reviewed notes' word accuracy: one row of figures per reviewed note, no text.

`note_accuracy`: a note's latest decision (finalized revision, or 0 when accepted as
is), the reviewer, when, its language, the manifest's author and department, and the
word alignment between the machine's text and the final one (words, substitutions,
deletions, insertions, accuracy). A purge keeps it (figures, not patient data).
Notes reviewed before this revision get their figures on first use: `medasr quality`
and the routing measure the ones still missing (tasks/review/backfill.py).

Revision ID: 0015_note_accuracy
Revises: 0012_not_audio_files
Create Date: 2026-12-02 01:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015_note_accuracy"
down_revision: str | Sequence[str] | None = "0014_unkeyed_receipts"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_INDEXES = {
    "ix_note_accuracy_reviewed_at": ["reviewed_at"],
    "ix_note_accuracy_author": ["author", "reviewed_at"],
    "ix_note_accuracy_department": ["department", "reviewed_at"],
    "ix_note_accuracy_language": ["language", "reviewed_at"],
}


def upgrade() -> None:
    """Add the table (empty: earlier reviews are measured on first use)."""
    op.create_table(
        "note_accuracy",
        sa.Column(
            "item_id",
            sa.Integer(),
            sa.ForeignKey("items.id", ondelete="CASCADE", name="fk_note_accuracy_item_id_items"),
            nullable=False,
        ),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("reviewer", sa.String(255), nullable=False),
        sa.Column("reviewed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("language", sa.String(16), nullable=False),
        sa.Column("author", sa.String(255), nullable=True),
        sa.Column("department", sa.String(255), nullable=True),
        sa.Column("words", sa.Integer(), nullable=False),
        sa.Column("substitutions", sa.Integer(), nullable=False),
        sa.Column("deletions", sa.Integer(), nullable=False),
        sa.Column("insertions", sa.Integer(), nullable=False),
        sa.Column("accuracy", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("item_id", name="pk_note_accuracy"),
    )
    for name, columns in _INDEXES.items():
        op.create_index(name, "note_accuracy", columns)


def downgrade() -> None:
    """Back to 0012: the figures go (the texts they were measured from may be gone too)."""
    for name in _INDEXES:
        op.drop_index(name, table_name="note_accuracy")
    op.drop_table("note_accuracy")
