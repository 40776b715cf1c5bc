"""transcribe_file / process_batch as plain functions: real devserver, real SQLite, real ffmpeg."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
import soundfile

from config.settings import PipelineSettings, StorageSettings
from service.client import TranscriptionClient
from service.devserver import RunningDevServer
from service.devserver.tone import encode_tone_dictation
from storage.database import Store
from storage.sources import list_audio
from tasks.gate import RequestGate
from tasks.transcribe import BatchContext, process_batch
from tests.servers import client_settings

# ~7 s of 16 kHz audio per chunk: several chunks for a short dictation.
CAP_BYTES = 224_000
TEXT = " ".join(f"item {i}. pulse regular, chest clear." for i in range(1, 7))


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store.open(StorageSettings(database_url=f"sqlite:///{tmp_path / 't.db'}"))
    yield opened
    opened.dispose()


@pytest.fixture
def recording(tmp_path: Path) -> Path:
    folder = tmp_path / "in"
    folder.mkdir()
    soundfile.write(folder / "note.wav", encode_tone_dictation(TEXT), 16000, subtype="PCM_16")
    return folder


def run_once(store: Store, server: RunningDevServer, folder: Path, **pipeline: object) -> list:
    async def go() -> list:
        service, encryption = client_settings(server, max_upload_bytes=CAP_BYTES)
        async with TranscriptionClient(service, encryption) as client:
            ctx = BatchContext(
                pipeline=PipelineSettings(settle_s=0, **pipeline),
                store=store,
                client=client,
                gate=RequestGate(concurrency=4),
                owner="test-owner",
                lease_s=60,
            )
            try:
                with store.repository() as repo:
                    repo.register_items(list_audio(str(folder), settle_s=0).files, language="en-IN")
                    items = repo.claim_batch(
                        owner="test-owner", language="en-IN", limit=10, lease_s=60
                    )
                return await process_batch(items, ctx=ctx)
            finally:
                ctx.close()

    return asyncio.run(go())


def item_of(store: Store):
    with store.repository() as repo:
        return next(iter(repo.export_rows()))


def test_chunks_joined_in_order_give_the_whole_text(
    store: Store, devserver_factory, recording: Path
) -> None:
    server = devserver_factory()
    outcomes = run_once(store, server, recording)

    assert [o.outcome for o in outcomes] == ["done"]
    row = item_of(store)
    assert row.chunks > 2
    assert row.text == TEXT
    assert sum(1 for e in server.ledger.entries() if e.status == 200) == row.chunks


def test_finished_chunks_are_not_sent_again_after_a_failure(
    store: Store, devserver_factory, recording: Path
) -> None:
    # Two requests succeed, then every request meets a 500 (each chunk's whole budget).
    server = devserver_factory(fault_script=("ok", "ok", *["500"] * 30))
    first = run_once(store, server, recording, concurrency=1, retry_delay_s=0)
    assert (first[0].outcome, first[0].retryable) == ("failed", True)
    sent_ok = {e.sha256 for e in server.ledger.entries() if e.status == 200}
    assert len(sent_ok) == 2

    with store.repository() as repo:
        assert repo.requeue_failures(language="en-IN", max_attempts=5, include_permanent=False) == 1
    healthy = devserver_factory()
    second = run_once(store, healthy, recording)

    assert second[0].outcome == "done"
    resent = {e.sha256 for e in healthy.ledger.entries()} & sent_ok
    assert resent == set()
    assert item_of(store).text == TEXT


def test_credentials_rejected_releases_the_item(
    store: Store, devserver_factory, recording: Path
) -> None:
    server = devserver_factory(auth_fail_after=1)
    outcomes = run_once(store, server, recording, concurrency=1)

    assert outcomes[0].outcome == "released"
    row = item_of(store)
    assert row.status == "pending"
    assert row.attempts == 0


def test_unreadable_audio_fails_one_file_and_not_the_batch(
    store: Store, devserver_factory, recording: Path
) -> None:
    (recording / "broken.mp3").write_bytes(b"\xff\xfb" + b"\x00" * 300)
    server = devserver_factory()

    outcomes = {Path(o.source_uri).name: o for o in run_once(store, server, recording)}

    assert outcomes["note.wav"].outcome == "done"
    assert outcomes["broken.mp3"].outcome == "failed"
    assert outcomes["broken.mp3"].retryable is False
