"""The sources a store has listed, and the files each listing ignored as not audio.

`listed_sources`: one row per source URI, written before a listing registers anything,
so a recording is named relative to its source even when no run row exists (a run
interrupted while Prefect starts). It keeps the latest listing's not-audio count, by
reason.

`not_audio_files`: the first names (relative to the source) of the files that listing
ignored as not audio, for `medasr status`. Names can carry patients' names: each listing
replaces its source's rows (a file gone from the source is gone here), at most
`IgnoredFiles.EXAMPLES` per source, and `medasr purge` removes them all.

Revision ID: 0012_not_audio_files
Revises: 0011_identity
Create Date: 2026-11-27 10:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012_not_audio_files"
down_revision: str | Sequence[str] | None = "0011_identity"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    """Add the two tables (sources already run over stay named by their runs)."""
    op.create_table(
        "listed_sources",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("uri", sa.Text(), nullable=False),
        sa.Column("listed_at", _TIMESTAMP, nullable=False),
        sa.Column("not_audio_count", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("not_audio_by_reason", sa.JSON(none_as_null=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_listed_sources"),
        sa.UniqueConstraint("uri", name="uq_listed_sources_uri"),
    )
    op.create_table(
        "not_audio_files",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "source_id",
            sa.Integer(),
            sa.ForeignKey(
                "listed_sources.id", ondelete="CASCADE", name="fk_not_audio_files_source_id"
            ),
            nullable=False,
        ),
        sa.Column("name", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_not_audio_files"),
    )
    op.create_index("ix_not_audio_files_source_id", "not_audio_files", ["source_id", "id"])


def downgrade() -> None:
    """Back to 0011: the names and the listed sources go (runs keep their sources)."""
    op.drop_index("ix_not_audio_files_source_id", table_name="not_audio_files")
    op.drop_table("not_audio_files")
    op.drop_table("listed_sources")
