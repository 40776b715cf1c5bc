"""`medasr deliver` in its own process names each document it filed, as a person reads it.

The lines are log records printed by the console handler Prefect's logging configuration
gives medasr's loggers; `deliver` runs no flow, so the command sets that up itself. In a
test process Prefect is usually imported already, which is why this runs the command.
"""

from __future__ import annotations

from pathlib import Path

from config.settings import StorageSettings
from devserver import start_devserver
from storage import open_store
from tests.flows.prefect_server import clean_env
from tests.helpers.cli import medasr
from tests.tasks.delivery.delivery_helpers import make_done

TOKEN = "deliver-lines-token"


def test_deliver_prints_a_line_for_each_document_it_filed(tmp_path: Path) -> None:
    database = f"sqlite:///{tmp_path / 'medasr.db'}"
    with start_devserver(token=TOKEN, port=0) as server:
        env = clean_env(
            tmp_path / "prefect",
            MEDASR_BASE_URL=server.url,
            MEDASR_TOKEN=TOKEN,
            MEDASR_DATABASE_URL=database,
            MEDASR_DATA_DIR=str(tmp_path / "data"),
        )
        assert medasr("db", "upgrade", env=env, cwd=tmp_path).returncode == 0
        store = open_store(StorageSettings(database_url=database))
        make_done(store, {"/archive/ward a/note-1.wav": "one", "/archive/note-2.wav": "two"})
        store.dispose()

        result = medasr("deliver", "--allow-unlinked", env=env, cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    output = result.stdout + result.stderr
    assert "delivered /archive/ward a/note-1.wav" in output
    assert "delivered /archive/note-2.wav" in output
