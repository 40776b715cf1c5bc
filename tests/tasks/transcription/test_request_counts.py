"""A run's request and retry counts are what the service saw (its ledger), not what was planned.

A request is counted when an attempt goes on the wire; a retry when a later attempt of
the same call does. A retry that was scheduled but never sent (the run stopped during
its backoff) is neither; nor is a call that never sent its first attempt.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import soundfile

from config.settings import PipelineSettings
from devserver import RunningDevServer
from devserver.tone import encode_tone_dictation
from service.client import RetryEvent, TranscriptionClient
from service.errors import CredentialsRejected
from storage.interface import UnitOfWorkFactory
from storage.sources import list_audio
from tasks.throttle.gate import RequestGate
from tasks.transcription.file_run import BatchContext, process_batch
from tasks.transcription.progress import RunStats
from tests.servers import client_settings

LANG = "en-IN"


def _one_short_file(tmp_path: Path) -> Path:
    folder = tmp_path / "in"
    folder.mkdir()
    soundfile.write(folder / "note.wav", encode_tone_dictation("review in six weeks."), 16000)
    return folder


def _run(
    store: UnitOfWorkFactory, server: RunningDevServer, folder: Path, *, gate: RequestGate
) -> RunStats:
    """Process the folder's files as a run does (its client, gate and counters)."""
    stats = RunStats()

    def stop_at_first_retry(_event: RetryEvent) -> None:
        # The run stops (as on Ctrl-C or a 403 elsewhere) while this retry waits.
        gate.stop(CredentialsRejected("the service rejected the token; check MEDASR_TOKEN"))

    async def go() -> None:
        settings = client_settings(server, max_attempts=5)
        async with TranscriptionClient(*settings, on_retry=stop_at_first_retry) as client:
            ctx = BatchContext(
                pipeline=PipelineSettings(settle_s=0),
                store=store,
                client=client,
                gate=gate,
                owner="counts",
                lease_s=60,
                stats=stats,
            )
            try:
                with store.unit_of_work() as uow:
                    uow.items.register_items(
                        list_audio(str(folder), settle_s=0).files, language=LANG
                    )
                    items = uow.claims.claim_batch(
                        owner="counts", language=LANG, limit=10, lease_s=60
                    )
                await process_batch(items, ctx=ctx)
            finally:
                ctx.close()

    asyncio.run(go())
    return stats


def test_a_retry_never_sent_is_not_counted(
    store: UnitOfWorkFactory, devserver_factory: Callable[..., RunningDevServer], tmp_path: Path
) -> None:
    server = devserver_factory(fault_script=("503",) * 5)
    stats = _run(store, server, _one_short_file(tmp_path), gate=RequestGate(concurrency=1))

    seen = server.ledger.entries()
    assert len(seen) == 1  # the 503; its retry was stopped before it went out
    assert (stats.requests, stats.retries) == (len(seen), 0)


def test_sent_retries_are_counted_as_the_service_saw_them(
    store: UnitOfWorkFactory, devserver_factory: Callable[..., RunningDevServer], tmp_path: Path
) -> None:
    server = devserver_factory(fault_script=("503", "503", "ok"))
    gate = RequestGate(concurrency=1)
    stats = RunStats()

    async def go() -> None:
        async with TranscriptionClient(*client_settings(server, max_attempts=5)) as client:
            ctx = BatchContext(pipeline=PipelineSettings(settle_s=0), store=store, client=client,
                               gate=gate, owner="counts", lease_s=60, stats=stats)  # fmt: skip
            try:
                with store.unit_of_work() as uow:
                    folder = _one_short_file(tmp_path)
                    uow.items.register_items(
                        list_audio(str(folder), settle_s=0).files, language=LANG
                    )
                    items = uow.claims.claim_batch(
                        owner="counts", language=LANG, limit=1, lease_s=60
                    )
                await process_batch(items, ctx=ctx)
            finally:
                ctx.close()

    asyncio.run(go())
    seen = server.ledger.entries()
    assert stats.requests == len(seen)
    assert stats.retries == 2  # the two 503s were each followed by one more attempt
