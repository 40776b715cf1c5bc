"""Purge receipts written before keyed hashes lose their unkeyed SHA-256 values.

A receipt kept the SHA-256 of every removed text, unkeyed: a patient id of a few digits
is found again by hashing every candidate. Receipts now keep HMAC-SHA256 under a key
outside the store (storage/retention.py); the old `sha256` maps, and each row's
`digest` over them, are removed from every purged row. What stays proves who purged
the row and when; the page and purge events keep their digests over many rows.
Nothing comes back on a downgrade.

Revision ID: 0014_unkeyed_receipts
Revises: 0013_refiling
Create Date: 2026-12-02 02:00:00
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014_unkeyed_receipts"
down_revision: str | Sequence[str] | None = "0013_refiling"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_PAGE = 1_000
_ROWS = sa.text(
    "SELECT id, extras FROM items WHERE status = 'purged' AND id > :after ORDER BY id LIMIT :n"
)
_WRITE = {
    "sqlite": sa.text("UPDATE items SET extras = :extras WHERE id = :id"),
    "postgresql": sa.text("UPDATE items SET extras = CAST(:extras AS JSON) WHERE id = :id"),
}


def upgrade() -> None:
    """Drop `sha256` and `digest` from every purged row's receipt that has them."""
    connection = op.get_bind()
    write = _WRITE[connection.dialect.name]
    after = 0
    while True:
        rows = connection.execute(_ROWS, {"after": after, "n": _PAGE}).all()
        if not rows:
            return
        for row_id, stored in rows:
            extras = json.loads(stored) if isinstance(stored, str) else stored
            receipt = (extras or {}).get("purged")
            if isinstance(receipt, dict) and "sha256" in receipt:
                receipt.pop("sha256")
                receipt.pop("digest", None)
                receipt["unkeyed_hashes_removed"] = True
                connection.execute(write, {"extras": json.dumps(extras), "id": row_id})
        after = rows[-1][0]


def downgrade() -> None:
    """Nothing to undo: the removed hashes are not kept anywhere."""
