"""One batch of files processed against a devserver, and the item it leaves."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from config.settings import PipelineSettings
from devserver import RunningDevServer
from service.client import RetryEvent, TranscriptionClient
from storage.interface import UnitOfWorkFactory
from storage.sources import list_audio
from tasks.throttle.gate import RequestGate
from tasks.transcription.file_run import BatchContext, process_batch
from tasks.transcription.review_routing import ReviewRouting
from tests.servers import client_settings

# ~7 s of 16 kHz audio per chunk: several chunks for a short dictation.
CAP_BYTES = 224_000
TEXT = " ".join(f"item {i}. pulse regular, chest clear." for i in range(1, 7))


def run_once(
    store: UnitOfWorkFactory,
    server: RunningDevServer,
    folder: Path,
    *,
    gate: RequestGate | None = None,
    service: dict[str, Any] | None = None,
    on_retry: Callable[[RetryEvent], None] | None = None,
    lease_s: float = 60,
    cap_bytes: int | None = CAP_BYTES,
    routing: ReviewRouting | None = None,
    hold_all: bool = False,
    **pipeline: object,
) -> list:
    """Register `folder`, claim up to 10 files and process them; `cap_bytes=None`: the
    service's own upload cap."""
    cap = {} if cap_bytes is None else {"max_upload_bytes": cap_bytes}

    async def go() -> list:
        settings = client_settings(server, **cap, **(service or {}))
        async with TranscriptionClient(*settings, on_retry=on_retry) as client:
            ctx = BatchContext(
                pipeline=PipelineSettings(settle_s=0, **pipeline),
                store=store,
                client=client,
                gate=gate or RequestGate(concurrency=4),
                owner="test-owner",
                lease_s=lease_s,
                routing=routing,
                hold_all=hold_all,
            )
            try:
                with store.unit_of_work() as uow:
                    uow.items.register_items(
                        list_audio(str(folder), settle_s=0).files, language="en-IN"
                    )
                    items = uow.claims.claim_batch(
                        owner="test-owner", language="en-IN", limit=10, lease_s=lease_s
                    )
                return await process_batch(items, ctx=ctx)
            finally:
                ctx.close()

    return asyncio.run(go())


def item_of(store: UnitOfWorkFactory):
    with store.unit_of_work() as uow:
        return next(iter(uow.item_queries.export_rows()))
