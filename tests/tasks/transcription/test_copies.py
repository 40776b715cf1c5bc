"""Copies of one recording (hard links, re-exports) cost one answer, in the run and the plan."""

from __future__ import annotations

import asyncio
import itertools
import os
from pathlib import Path

import soundfile

from config.settings import PipelineSettings
from devserver.tone import encode_tone_dictation
from service.client import TranscriptionClient
from storage.interface import UnitOfWorkFactory
from storage.sources import list_audio
from tasks.throttle.gate import RequestGate
from tasks.transcription import backlog_plan as planning
from tasks.transcription.backlog_plan import plan_backlog
from tasks.transcription.file_run import BatchContext, transcribe_file
from tests.helpers.transcription import CAP_BYTES, TEXT, item_of, run_once
from tests.servers import client_settings

COPIES = 10


def linked_copies(folder: Path, *, copies: int = COPIES) -> Path:
    """`copies` names in day folders for one recording's content (hard links)."""
    original = folder / "2024" / "01" / "01" / "note.wav"
    original.parent.mkdir(parents=True)
    soundfile.write(original, encode_tone_dictation(TEXT), 16000, subtype="PCM_16")
    for i in range(1, copies):
        link = folder / "2024" / "01" / f"{i + 1:02d}" / "note.wav"
        link.parent.mkdir(parents=True)
        os.link(original, link)
    return folder


def test_copies_in_flight_at_once_are_sent_once(
    store: UnitOfWorkFactory, devserver_factory, tmp_path: Path
) -> None:
    folder = linked_copies(tmp_path / "in")
    server = devserver_factory()

    outcomes = run_once(store, server, folder, concurrency=4)

    assert [o.outcome for o in outcomes] == ["done"] * COPIES
    answered = sum(1 for e in server.ledger.entries() if e.status == 200)
    with store.unit_of_work() as uow:
        rows = list(uow.item_queries.export_rows())
    assert {row.text for row in rows} == {TEXT}
    chunks = {row.chunks for row in rows}
    assert answered == len(server.ledger) == chunks.pop()  # one file's chunks, once
    assert item_of(store).text == TEXT


def test_the_dry_run_plans_one_file_for_its_copies(
    store: UnitOfWorkFactory, tmp_path: Path
) -> None:
    folder = linked_copies(tmp_path / "in")
    plans = [
        plan_backlog(
            source=str(folder),
            language="en-IN",
            store=maybe,
            max_wav_bytes=CAP_BYTES,
            min_pause_ms=300,
            settle_s=0,
        )
        for maybe in (None, store)
    ]
    for plan in plans:
        assert (plan.files, plan.to_transcribe, plan.reused) == (COPIES, 1, COPIES - 1)
        assert plan.requests == plan.chunks > 1  # one file's chunks


def test_bounded_map_pulls_only_a_window_ahead_of_its_consumer() -> None:
    pulled: list[int] = []

    def source():  # endless: a map that materialised it would never return
        for i in itertools.count():
            pulled.append(i)
            yield i

    results = planning.bounded_map(lambda x: x * 2, source(), workers=2, ahead=8)
    assert [next(results) for _ in range(5)] == [0, 2, 4, 6, 8]
    assert len(pulled) <= 5 + 8


def test_one_file_at_a_time_a_copy_of_failed_content_does_not_wait_forever(
    store: UnitOfWorkFactory, devserver_factory, tmp_path: Path
) -> None:
    folder = tmp_path / "in"
    (folder / "a").mkdir(parents=True)
    (folder / "a" / "broken.wav").write_bytes(b"RIFF\x00\x00\x00\x00WAVEjunk" * 50)
    os.link(folder / "a" / "broken.wav", folder / "b.wav")
    server = devserver_factory()

    async def go() -> list[str]:
        settings = client_settings(server, max_upload_bytes=CAP_BYTES)
        async with TranscriptionClient(*settings) as client:
            ctx = BatchContext(
                pipeline=PipelineSettings(settle_s=0),
                store=store,
                client=client,
                gate=RequestGate(concurrency=2),
                owner="test-owner",
                lease_s=60,
            )
            try:
                with store.unit_of_work() as uow:
                    uow.items.register_items(
                        list_audio(str(folder), settle_s=0).files, language="en-IN"
                    )
                    items = uow.claims.claim_batch(
                        owner="test-owner", language="en-IN", limit=2, lease_s=60
                    )
                done = []
                for item in items:  # the second is a copy of the first, settled by now
                    outcome = await asyncio.wait_for(transcribe_file(item, ctx=ctx), 60)
                    done.append(outcome.outcome)
                return done
            finally:
                ctx.close()

    # Nothing answered the content: the copy decides again instead of waiting for it.
    assert asyncio.run(go()) == ["failed", "failed"]
    assert len(server.ledger) == 0
