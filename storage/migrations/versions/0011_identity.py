"""Whose note: a store identity, and each delivery's own identifiers kept on its row.

`store_identity`: one row, made here once per database (8 characters of Crockford
base32, 40 random bits); backups and later migrations carry it, so every identifier
derived from it stays the same for this store and differs from every other store's.

`deliveries` gains what a receiver knows a delivery by: `control_id` (MSH-10 of the
current attempt series), `series`, `document_id` (TXA-12, or a FHIR masterIdentifier)
and `sent_text` (the words last sent, kept while the answer may be missing, so an
in-doubt version can be settled under its own identifiers after the transcript
changed). Rows already sent keep the identifiers they went out with, computed as
they were then; rows never sent get the new ones when they go.

Revision ID: 0011_identity
Revises: 0010_review
Create Date: 2026-11-27 07:30:00
"""

from __future__ import annotations

import hashlib
import json
import secrets
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision: str = "0011_identity"
down_revision: str | Sequence[str] | None = "0010_review"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
# The namespace and forms the identifiers were made with before this revision.
_OLD_NAMESPACE = uuid.UUID("6f1c2d0a-8e3b-5b7e-9a43-2d6c0f3e9b11")
_SENT_ROWS = sa.text(
    "SELECT id, version, target, response FROM deliveries "
    "WHERE status IN ('delivered', 'in_doubt') OR sending_at IS NOT NULL"
)


def upgrade() -> None:
    """Make the store identity; add the identifier columns; keep sent rows' old ones."""
    table = op.create_table(
        "store_identity",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("store_id", sa.String(16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_store_identity"),
        sa.CheckConstraint("id = 1", name="ck_store_identity_one_row"),
    )
    store_id = "".join(secrets.choice(_CROCKFORD) for _ in range(8))
    op.bulk_insert(table, [{"id": 1, "store_id": store_id, "created_at": datetime.now(UTC)}])
    with op.batch_alter_table("deliveries") as batch:
        batch.add_column(sa.Column("control_id", sa.String(64), nullable=True))
        batch.add_column(sa.Column("series", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("document_id", sa.String(128), nullable=True))
        batch.add_column(sa.Column("sent_text", sa.Text(), nullable=True))
    _keep_sent_identifiers(store_id)


def _keep_sent_identifiers(store_id: str) -> None:
    """Rows that went out keep the MSH-10 / TXA-12 / masterIdentifier they were sent with."""
    bind = op.get_bind()
    rows = bind.execute(_SENT_ROWS).all()
    update = sa.text("UPDATE deliveries SET control_id = :c, document_id = :d WHERE id = :i")
    for row in rows:
        control, document = _old_identifiers(row.id, row.version, row.target, row.response)
        control = control or f"{store_id}{_base36(row.id)}-0"
        bind.execute(update, {"c": control, "d": document, "i": row.id})


def _old_identifiers(
    delivery_id: int, version: str, target: str, response: object
) -> tuple[str | None, str | None]:
    if isinstance(response, str):  # SQLite hands JSON back as text in a plain query
        response = json.loads(response)
    recorded = response if isinstance(response, dict) else {}
    if target.startswith(("mllp://", "mllps://")):
        named = f"msh10\n{delivery_id}\n{target}\n0"
        control = hashlib.sha256(named.encode("utf-8")).hexdigest()[:20].upper()
        number = hashlib.sha256(f"txa12\n{version}".encode()).hexdigest()[:32].upper()
        return (
            str(recorded.get("msh_10") or control),
            str(recorded.get("txa_12") or f"MEDASR-{number}"),
        )
    return None, f"urn:uuid:{uuid.uuid5(_OLD_NAMESPACE, f'version:{version}')}"


def _base36(number: int) -> str:
    digits = ""
    while True:
        number, digit = divmod(number, 36)
        digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"[digit] + digits
        if number == 0:
            return digits


def downgrade() -> None:
    """Back to 0006: the identifiers and the store identity go (sent rows keep responses)."""
    with op.batch_alter_table("deliveries") as batch:
        batch.drop_column("sent_text")
        batch.drop_column("document_id")
        batch.drop_column("series")
        batch.drop_column("control_id")
    op.drop_table("store_identity")
