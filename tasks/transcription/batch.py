"""What every file of a run shares: settings, store, client, gate, leases, decoders.

A plain class on purpose: Prefect does not walk it. Built once per drain
(flows/setup/bootstrap.py) and handed to each batch's task run.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from config.quality import QualitySettings
from config.settings import PipelineSettings, StorageSettings
from service.client import TranscriptionClient
from storage.interface import UnitOfWorkFactory
from storage.records import ItemRecord
from tasks.audio import DecoderPool
from tasks.throttle.gate import RequestGate
from tasks.transcription.audio_budget import AudioBudget
from tasks.transcription.progress import RunStats
from tasks.transcription.recorder import FileRecorder
from tasks.transcription.reuse import ContentInFlight
from tasks.transcription.review_routing import ReviewRouting
from tasks.work.group_commit import GroupWriter
from tasks.work.journal import Journal
from tasks.work.lease_keeper import LeaseKeeper

# Chunks of one file held in memory at once (being sent or waiting for a slot).
CHUNKS_AHEAD_PER_FILE = 3


class BatchContext:
    """What every file of a run shares. A plain class on purpose: Prefect does not walk it."""

    def __init__(
        self,
        *,
        pipeline: PipelineSettings,
        store: UnitOfWorkFactory,
        client: TranscriptionClient,
        gate: RequestGate,
        owner: str,
        lease_s: float,
        storage_options: dict[str, Any] | None = None,
        stats: RunStats | None = None,
        quality: QualitySettings | None = None,
        journal: Journal | None = None,
        store_retry_s: float | None = None,
        source_roots: tuple[str, ...] = (),
        hold_all: bool = False,
        routing: ReviewRouting | None = None,
        audio_budget: AudioBudget | None = None,
    ) -> None:
        self.pipeline = pipeline
        self.audio_budget = audio_budget  # the run's audio cap, if it has one
        # MEDASR_REVIEW__REQUIRED=all or measured, or a sample: transcripts the gate did not
        # flag may wait for a person; the run counts them as done (a routine review).
        self.hold_all = hold_all
        self.routing = routing or ReviewRouting(mode="all" if hold_all else "flagged")
        self.source_roots = source_roots  # log lines name files relative to these
        self.store, self.client, self.gate = store, client, gate
        self.owner, self.lease_s, self.storage_options = owner, lease_s, storage_options
        self.stats = stats if stats is not None else RunStats()
        self.quality = quality if quality is not None else QualitySettings()
        self.journal, self.store_retry_s = _journal_and_retry_s(journal, store_retry_s)
        self.decode_pool = ThreadPoolExecutor(
            max_workers=pipeline.decode_workers, thread_name_prefix="medasr-decode"
        )
        # One libav process per decode thread, kept for the run (tasks/audio/decoder_pool.py).
        self.decoders = DecoderPool(max_processes=pipeline.decode_workers)
        self.files_at_once = _files_at_once(pipeline)
        self.in_flight = ContentInFlight()  # copies of content being sent wait for its answer
        self.writer = GroupWriter(store)  # the files' writes share commits
        self.leases = LeaseKeeper(store=store, lease_s=lease_s, writer=self.writer)

    def recorder_for(self, item: ItemRecord) -> FileRecorder:
        """The store side of one claimed file, bound to its claim and this run's leases."""
        return FileRecorder(
            item,
            store=self.store,
            leases=self.leases,
            journal=self.journal,
            store_retry_s=self.store_retry_s,
            in_flight=self.in_flight,
            writer=self.writer,
        )

    def close(self) -> None:
        """Stop the decode threads (waits for running decodes to end), then the decoding
        processes."""
        self.decode_pool.shutdown(wait=True, cancel_futures=True)
        self.decoders.close()

    async def aclose(self) -> None:
        """Stop the lease keeper, then the decode threads."""
        await self.leases.aclose()
        await asyncio.to_thread(self.close)


def _files_at_once(pipeline: PipelineSettings) -> asyncio.Semaphore:
    """Files in flight, shared by every batch of the run: while one batch loop waits for
    its slowest file or for Prefect between task runs, the other loop's files keep the
    request slots and the decoders busy. Enough for every request slot plus two files per
    decoder; more would only queue at the decoders and hold memory (a long recording in
    flight holds up to 20 MB)."""
    return asyncio.Semaphore(pipeline.concurrency + 2 * pipeline.decode_workers)


def _journal_and_retry_s(
    journal: Journal | None, store_retry_s: float | None
) -> tuple[Journal, float]:
    """The journal and the store's retry time given, else the storage settings' defaults."""
    defaults = StorageSettings()
    journal = journal or Journal.in_data_dir(defaults.data_dir)
    return journal, defaults.store_retry_s if store_retry_s is None else store_retry_s
