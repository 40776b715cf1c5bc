"""A purge end to end: transcribe, deliver, purge; then the same source is neither bought
nor filed again (the devserver's ledger), and the text is gone from the database files
and the data dir."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from prefect.settings import PREFECT_API_DATABASE_CONNECTION_URL

from config.settings import Settings
from devserver import RunningDevServer
from flows.backlog import transcribe_backlog
from storage import open_store
from tasks.delivery.deliverer import deliver_pending
from tasks.retention.durations import parse_retention
from tasks.retention.recording_purge import PurgeRequest, purge_recordings
from tests.helpers.flows import Corpus, run_flow

LATER = datetime.now(UTC) + timedelta(days=100)


def deliver(settings: Settings) -> None:
    store = open_store(settings.storage)
    try:
        asyncio.run(
            deliver_pending(
                settings=settings,
                store=store,
                language=None,
                format_name="txt",
                allow_unlinked=True,  # no manifest here: the notes go unlinked on purpose
            )
        )
    finally:
        store.dispose()


def files_holding(folder: Path, needle: bytes) -> list[str]:
    return [str(p) for p in folder.rglob("*") if p.is_file() and needle in p.read_bytes()]


def prefect_files_holding(texts: Iterable[str]) -> list[str]:
    """Files of the Prefect database (the test harness's SQLite) holding any of `texts`."""
    url = str(PREFECT_API_DATABASE_CONNECTION_URL.value())
    database = Path(url.split(":///", 1)[1])
    assert database.is_file()
    files = [p for p in database.parent.glob(database.name + "*") if p.is_file()]
    return [str(p) for p in files for t in texts if t.encode("utf-8") in p.read_bytes()]


def test_purged_recordings_are_not_bought_or_filed_again_and_their_text_is_gone(
    pinned: Settings, corpus: Corpus, flow_server: RunningDevServer, tmp_path: Path
) -> None:
    run_flow(transcribe_backlog, source=str(corpus.root), language="en-IN")
    deliver(pinned)
    asr = len([e for e in flow_server.ledger.entries() if e.path != "/mr/api/v2/docs"])
    filed = len([e for e in flow_server.ledger.entries() if e.path == "/mr/api/v2/docs"])
    assert filed == len(corpus.texts)
    assert prefect_files_holding(corpus.texts.values()) == []  # never text...
    assert prefect_files_holding(["corrupt.mp3"]) != []  # ...but names (the grep can see)
    data_dir = tmp_path / "data"
    journal = data_dir / "journal"
    journal.mkdir(parents=True)
    store = open_store(pinned.storage)
    try:
        with store.unit_of_work(read_only=True) as uow:
            done = uow.item_queries.done_items_page(language=None, after_id=0, limit=50)
        # An answer left in the journal (the store was down when it came) holds text too.
        first = done[0]
        (journal / f"{first.id}-0-0123456789ab.json").write_text(json.dumps({"text": first.text}))
        request = PurgeRequest(
            retention=parse_retention("90d"), actor="os:officer@host", delivery_configured=True
        )
        result = purge_recordings(store, request, journal_folder=journal, now=LATER)
    finally:
        store.dispose()
    assert result.total == len(corpus.texts) + 1  # the done ones and the silent one
    assert result.reclaimed.startswith("VACUUM")

    database = Path(str(pinned.storage.database_url).removeprefix("sqlite:///"))
    for text in corpus.texts.values():
        needle = text.encode("utf-8")
        assert files_holding(database.parent, needle) == [], text
        assert files_holding(data_dir, needle) == []

    run_flow(transcribe_backlog, source=str(corpus.root), language="en-IN")
    deliver(pinned)
    assert len([e for e in flow_server.ledger.entries() if e.path != "/mr/api/v2/docs"]) == asr
    assert len([e for e in flow_server.ledger.entries() if e.path == "/mr/api/v2/docs"]) == filed


def test_the_purge_deployments_flow_purges_and_writes_its_receipt(pinned: Settings) -> None:
    from flows.purge import purge_recordings_flow
    from tests.audit.tampering import run_sql
    from tests.tasks.delivery.delivery_helpers import make_done

    store = open_store(pinned.storage)
    try:
        make_done(store, {"/ward/a.wav": "alpha Zyxwvut", "/ward/b.wav": "bravo Qwertyu"})
        run_sql(pinned.storage.database_url, "UPDATE items SET done_at = '2000-01-01 00:00:00'")
        summary = asyncio.run(purge_recordings_flow(retention="90d"))
        with store.unit_of_work(read_only=True) as uow:
            receipt = uow.audit.newest_event(action="purged")
    finally:
        store.dispose()
    assert summary["purged"] == 2
    assert summary["receipts"] == 1
    assert receipt is not None
    assert receipt.detail is not None
    assert receipt.detail["older_than"] == "90d"


def test_a_purged_recording_touched_but_unchanged_stays_purged(
    pinned: Settings, corpus: Corpus, flow_server: RunningDevServer, tmp_path: Path
) -> None:
    import os

    run_flow(transcribe_backlog, source=str(corpus.root), language="en-IN")
    deliver(pinned)
    asr = len([e for e in flow_server.ledger.entries() if e.path != "/mr/api/v2/docs"])
    filed = len([e for e in flow_server.ledger.entries() if e.path == "/mr/api/v2/docs"])
    store = open_store(pinned.storage)
    try:
        request = PurgeRequest(
            retention=parse_retention("90d"), actor="os:officer@host", delivery_configured=True
        )
        purged = purge_recordings(store, request, journal_folder=tmp_path / "j", now=LATER).total
        touched = [p for p in corpus.root.rglob("*") if p.is_file()]
        for path in touched:  # a backup restore or a copy: new mtime, the same bytes
            stat = path.stat()
            os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 86_400 * 10**9))

        summary = run_flow(transcribe_backlog, source=str(corpus.root), language="en-IN")
        deliver(pinned)
        with store.unit_of_work(read_only=True) as uow:
            still = uow.item_queries.done_items_page(
                language=None, after_id=0, limit=50, status="purged"
            )
    finally:
        store.dispose()
    assert len([e for e in flow_server.ledger.entries() if e.path != "/mr/api/v2/docs"]) == asr
    assert len([e for e in flow_server.ledger.entries() if e.path == "/mr/api/v2/docs"]) == filed
    assert len(still) == purged
    assert all(item.text is None and "purged" in item.extras for item in still)
    assert summary.files_purged == purged
    assert ("files_purged", purged) in summary.rows()
    assert summary.run_counts()["purged_unchanged"] == purged
    assert [row for row in summary.to_check if row.status == "purged"] == []  # nothing to do


def test_prefects_database_holds_no_transcript_text_after_a_delivering_night_and_a_purge(
    pinned: Settings, corpus: Corpus, flow_server: RunningDevServer
) -> None:
    from config.settings import pinned_settings
    from flows.purge import purge_recordings_flow
    from tests.audit.tampering import run_sql

    rows = "\n".join(f"{name},P-{i}" for i, name in enumerate(sorted(corpus.texts)))
    (corpus.root / "medasr.csv").write_text(f"path,patient_id\n{rows}\n", encoding="utf-8")
    delivery = pinned.delivery.model_copy(
        update={"enabled": True, "docs_query": "patient_id={patient_id}"}
    )
    with pinned_settings(pinned.model_copy(update={"delivery": delivery})):
        night = run_flow(transcribe_backlog, source=str(corpus.root), language="en-IN")
        run_sql(pinned.storage.database_url, "UPDATE items SET done_at = '2000-01-01 00:00:00'")
        purge = asyncio.run(purge_recordings_flow(retention="90d"))

    assert night.delivery is not None
    assert night.delivery.delivered == len(corpus.texts)
    assert purge["purged"] >= len(corpus.texts)
    assert prefect_files_holding(corpus.texts.values()) == []
    assert prefect_files_holding(["corrupt.mp3"]) != []  # names are there: the grep sees
