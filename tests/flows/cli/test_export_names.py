"""Export names recordings as a person reads them, and keeps the full URI for machines."""

from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path

from config.settings import StorageSettings
from storage import open_store
from storage.records import SourceFile
from tests.flows.prefect_server import MEDASR, stripped_env

LANG = "en-IN"


def test_export_source_is_relative_and_source_uri_is_the_full_uri(tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    failed_uri = str(archive / "b.mp3")
    url = f"sqlite:///{tmp_path / 'medasr.db'}"
    store = open_store(StorageSettings(database_url=url))
    with store.unit_of_work() as uow:
        uow.runs.start_run(source=str(archive), language=LANG)
        uow.items.register_items([SourceFile(failed_uri, 10, "v1")], language=LANG)
    with store.unit_of_work() as uow:
        [item] = uow.claims.claim_batch(owner="w", language=LANG, limit=1, lease_s=60)
        uow.claims.fail_item(
            item.id,
            lease_token=item.lease_token,
            error_kind="corrupt_audio",
            message=f"damaged or truncated audio file: {failed_uri} (no frames)",
            retryable=False,
            next_attempt_at=None,
        )
    store.dispose()
    env = stripped_env() | {"MEDASR_DATABASE_URL": url}
    for fmt in ("jsonl", "csv"):
        out = tmp_path / f"items.{fmt}"
        done = subprocess.run(
            [MEDASR, "export", "--format", fmt, "--out", str(out)],
            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        text = out.read_text(encoding="utf-8")
        rows = (
            [json.loads(line) for line in text.splitlines()]
            if fmt == "jsonl"
            else list(csv.DictReader(text.splitlines()))
        )
        [row] = rows
        assert (row["source"], row["source_uri"]) == ("b.mp3", failed_uri)
        assert row["error_message"] == "damaged or truncated audio file: b.mp3 (no frames)"
