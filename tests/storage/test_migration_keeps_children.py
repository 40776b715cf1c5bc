"""An upgrade that copies a table (SQLite batch mode) keeps every row that refers to it."""

from __future__ import annotations

from pathlib import Path

from storage.database import upgrade_database
from tests.helpers.raw_sql import run_sql as _sql

NOW = "2026-11-27 07:00:00"


def test_copying_the_items_table_deletes_no_chunk_and_no_delivery(tmp_path: Path) -> None:
    # Batch mode drops the old items table; with foreign keys on, SQLite's implicit
    # DELETE of that DROP cascaded into chunks and deliveries, and the next deliver
    # would have filed every note again.
    url = f"sqlite:///{tmp_path / 'medasr.db'}"
    upgrade_database(url, revision="0006_queue")
    _sql(
        url,
        "INSERT INTO items (id, source_uri, language, source_version, size_bytes, status, "
        f"retryable, attempts, created_at, updated_at) VALUES (1, '/d/a.wav', 'en-IN', 'v1', 1, "
        f"'done', false, 1, '{NOW}', '{NOW}')",
        'INSERT INTO chunks (item_id, "index", start_ms, end_ms, size_bytes, status, attempts, '
        f"updated_at) VALUES (1, 0, 0, 1000, 32044, 'done', 1, '{NOW}')",
        "INSERT INTO deliveries (id, item_id, language, version, format, status, attempts, "
        f"retryable, created_at, updated_at, target) VALUES (1, 1, 'en-IN', '{'a' * 64}', "
        f"'txt', 'delivered', 1, false, '{NOW}', '{NOW}', 'docs')",
    )
    upgrade_database(url)
    counts = _sql(url, "SELECT (SELECT count(*) FROM chunks), (SELECT count(*) FROM deliveries)")
    assert counts == [(1, 1)]
