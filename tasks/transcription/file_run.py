"""One file end to end: fetch, fingerprint, reuse or split, send chunks, join, record.

`transcribe_file` is the plain function; `process_batch` runs many of them with
bounded concurrency (the gate) and bounded decoding (a thread pool of ffmpeg readers).
Everything a file asks of the store goes through its FileRecorder
(tasks/transcription/recorder.py), bound to the item, its claim and its lease; what
earlier answers cover is decided by tasks/transcription/reuse.py, as in the dry run.
Every finished chunk is journaled, then committed in the next group commit (the entry
stays while the store is down), so a crash never pays for it twice. The lease keeper
renews the batch's claims on a timer; store calls run in worker threads, never on the
event loop, and so do the fetch and the fingerprint (one read: tasks/discovery/fetch.py).
What the files of a run share is the BatchContext (tasks/transcription/batch.py).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Generator, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path

from config.errors import InternalError, MedasrError
from service.client import Transcription
from service.contract import chunk_filename
from storage.errors import LeaseLost, StoreError
from storage.records import ItemRecord, ItemStatus
from tasks.audio import Chunk, audio_length_ms, iter_chunks
from tasks.discovery.fetch import fetched_file
from tasks.discovery.recording_names import reason_about, recording_name
from tasks.errors import DamagedTail, SilentAudio
from tasks.throttle.gate import RUN_STOP_ERRORS
from tasks.transcription.batch import CHUNKS_AHEAD_PER_FILE, BatchContext
from tasks.transcription.coverage import Coverage
from tasks.transcription.file_end import (
    FileRun,
    ending,
    is_last_answer,
    require_finishable,
)
from tasks.transcription.item_language import require_known_language
from tasks.transcription.progress import TRANSCRIBE_LOGGER, FileOutcome, progress_observer
from tasks.transcription.recorder import FileRecorder
from tasks.transcription.reuse import ReuseDecision

logger = logging.getLogger(TRANSCRIBE_LOGGER)
# Marks the one line per failed or skipped file: a face printing its own line per file
# (flows/cli/console.py without a terminal) leaves these out.
PER_FILE = {"per_file": True}

__all__ = ["CHUNKS_AHEAD_PER_FILE", "BatchContext", "process_batch", "transcribe_file"]


async def process_batch(items: Sequence[ItemRecord], *, ctx: BatchContext) -> list[FileOutcome]:
    """Transcribe claimed items concurrently; one bad file never stops the others."""

    async def one(item: ItemRecord) -> FileOutcome:
        recorder = ctx.recorder_for(item)
        try:
            async with ctx.files_at_once:
                if ctx.gate.stopped is not None:
                    return await _release(recorder)
                outcome = await _transcribe_with(recorder, ctx=ctx)
        finally:
            recorder.let_go()
        ctx.stats.add(outcome, language=item.language)
        progress_observer().on_file_finished(outcome)
        return outcome

    async with ctx.leases.holding(items):  # renewed while they wait for a file slot too
        return list(await asyncio.gather(*(one(item) for item in items)))


async def transcribe_file(item: ItemRecord, *, ctx: BatchContext) -> FileOutcome:
    """Take one claimed item to done, skipped, failed or released; never raises MedasrError."""
    recorder = ctx.recorder_for(item)
    try:
        return await _transcribe_with(recorder, ctx=ctx)
    finally:
        recorder.let_go()  # copies of its content waiting in this run decide again


async def _transcribe_with(recorder: FileRecorder, *, ctx: BatchContext) -> FileOutcome:
    item = recorder.item
    run = FileRun(recorder=recorder)
    try:
        return await _settle(run, ctx=ctx)
    except LeaseLost:
        logger.warning("lost the lease on %s; another worker owns it now", _name(item, ctx))
        return FileOutcome(item.source_uri, "lost", requests=run.requests)
    except StoreError as exc:  # recording the outcome failed: the lease gives the item back
        logger.error("could not record the outcome of %s: %s", _name(item, ctx), exc)
        return FileOutcome(item.source_uri, "lost", requests=run.requests)


async def _settle(run: FileRun, *, ctx: BatchContext) -> FileOutcome:
    """Process the file and record its outcome; raises LeaseLost or StoreError only."""
    item, recorder = run.item, run.recorder
    try:
        await recorder.require_lease()  # taken over while it waited for a slot?
        require_known_language(item, roots=ctx.source_roots)  # before a byte is read
        async with fetched_file(item.source_uri, storage_options=ctx.storage_options) as fetched:
            decision = await recorder.settle_content(fetched.fingerprint)
            if decision.stays_purged:
                return FileOutcome(item.source_uri, ItemStatus.PURGED)
            if decision.stays_as_was:  # touched, same bytes: settled as it was
                return FileOutcome(item.source_uri, ItemStatus(item.extras["touched"]["status"]))
            if decision.transcript is not None:
                return FileOutcome(
                    item.source_uri, ItemStatus.DONE, duration_ms=decision.transcript.duration_ms
                )
            if not await _fits_budget(fetched.path, item=item, ctx=ctx):
                return await _release(recorder)  # whole or not at all: the next run's
            return await _split_and_send(fetched.path, decision, run=run, ctx=ctx)
    except RUN_STOP_ERRORS as exc:  # the run stops, not the file
        ctx.gate.stop(exc)
        return await _release(recorder)
    except LeaseLost:
        raise
    except SilentAudio as exc:
        return await _skip(run, exc, ctx=ctx)
    except MedasrError as exc:
        return await _fail(run, exc, ctx=ctx)
    except Exception as exc:  # a bug must cost one file, not the batch
        logger.exception("unexpected error on %s", _name(item, ctx))
        internal = InternalError(f"unexpected internal error ({type(exc).__name__}); see the logs")
        return await _fail(run, internal, ctx=ctx)


async def _skip(run: FileRun, exc: SilentAudio, *, ctx: BatchContext) -> FileOutcome:
    """Nothing to transcribe (no speech): the file is skipped, with the reason."""
    item, kind, reason = run.item, exc.kind, exc.message
    await run.recorder.skip(reason_kind=kind, reason=reason)
    why = reason_about(reason, uri=item.source_uri, roots=ctx.source_roots)
    logger.warning("%s skipped (%s): %s", _name(item, ctx), kind, why, extra=PER_FILE)
    return FileOutcome(
        item.source_uri,
        ItemStatus.SKIPPED,
        requests=run.requests,
        error_kind=kind,
        reason=reason,
    )


async def _fits_budget(path: Path, *, item: ItemRecord, ctx: BatchContext) -> bool:
    """Whether the run's audio cap (if any) has room for the whole recording, reserved
    now; measured in a decode thread before any of it is sent."""
    budget = ctx.audio_budget
    if budget is None:
        return True
    if budget.reached:
        return False
    length_ms = await asyncio.get_running_loop().run_in_executor(
        ctx.decode_pool, partial(audio_length_ms, path, timeout_s=ctx.pipeline.ffmpeg_timeout_s)
    )
    return budget.take(audio_ms=length_ms, size_bytes=item.size_bytes)


async def _split_and_send(
    path: Path, decision: ReuseDecision, *, run: FileRun, ctx: BatchContext
) -> FileOutcome:
    """Decode in a worker thread, send each chunk as it appears, then record the file."""
    coverage = Coverage(decision.answered)
    chunks = iter_chunks(
        path,
        max_bytes=ctx.client.max_wav_bytes,
        min_pause_ms=ctx.pipeline.min_pause_ms,
        timeout_s=ctx.pipeline.ffmpeg_timeout_s,
        cut_at_samples=coverage.cut_points(),
        decoders=ctx.decoders,
    )
    held = asyncio.Semaphore(CHUNKS_AHEAD_PER_FILE)
    sends: list[asyncio.Task[None]] = []
    decoding: Future[Chunk | None] | None = None
    try:
        while not run.errors and ctx.gate.stopped is None:
            await held.acquire()
            decoding = ctx.decode_pool.submit(_next_chunk, chunks)
            chunk = await _decoded(decoding, run=run)
            if chunk is None:
                run.decoded_all = True
                held.release()
                break
            if _answered_before(chunk, run=run, coverage=coverage, ctx=ctx):
                held.release()
                continue
            chunk = replace(chunk, index=coverage.row_index(chunk))
            run.sending += 1
            sends.append(asyncio.create_task(_send_chunk(chunk, run=run, ctx=ctx, held=held)))
    finally:
        await _stop_decoding(chunks, decoding, ctx=ctx)
        await asyncio.gather(*sends, return_exceptions=True)
    return await _finish(run, ctx=ctx)


def _answered_before(chunk: Chunk, *, run: FileRun, coverage: Coverage, ctx: BatchContext) -> bool:
    """Count a decoded chunk's voiced audio; True when an earlier split answered it (its
    text reused: never paid twice)."""
    run.last = chunk
    key = _speech_key(chunk, run=run, coverage=coverage)
    run.voiced_ms[key] = run.voiced_ms.get(key, 0) + chunk.voiced_ms
    reused = coverage.reused_text(chunk)
    run.all_silent = run.all_silent and chunk.silent and reused is None
    if reused is None:
        return False
    if reused or key not in run.texts:
        run.texts[key] = reused
    ctx.stats.chunks_reused += 1
    return True


async def _stop_decoding(
    chunks: Generator[Chunk, None, None],
    decoding: Future[Chunk | None] | None,
    *,
    ctx: BatchContext,
) -> None:
    """Let a chunk being decoded end, then close the decoder (stopping ffmpeg)."""
    if decoding is not None and not decoding.done():
        # Cancelled while a decode thread runs the generator: closing it from another
        # thread now would fail ("generator already executing"); let that chunk end.
        await asyncio.wait([asyncio.wrap_future(decoding)])
    if inspect.getgeneratorstate(chunks) != inspect.GEN_CLOSED:
        # Suspended: closing it may stop ffmpeg and wait for it, so in a decode thread.
        # Ended (every chunk out, or raised): closing does nothing; no thread hop.
        await asyncio.get_running_loop().run_in_executor(ctx.decode_pool, chunks.close)


def _speech_key(chunk: Chunk, *, run: FileRun, coverage: Coverage) -> int:
    """Where a chunk's text and voiced ms are kept: its start, or for a piece of audio one
    earlier answer covers, the start of that answer's first piece (one text, its speech)."""
    answered = coverage.covering(chunk)
    if answered is None:
        return chunk.start_ms
    return run.answer_keys.setdefault(answered.start_ms, chunk.start_ms)


def _next_chunk(chunks: Iterator[Chunk]) -> Chunk | None:
    return next(chunks, None)


async def _decoded(decoding: Future[Chunk | None], *, run: FileRun) -> Chunk | None:
    """The next chunk; None at the end, or at a damaged tail (kept in `run.damage`)."""
    try:
        return await asyncio.wrap_future(decoding)
    except DamagedTail as exc:
        run.damage = exc
        return None


async def _send_chunk(
    chunk: Chunk, *, run: FileRun, ctx: BatchContext, held: asyncio.Semaphore
) -> None:
    """Send one chunk (unless silent) and commit its result (journaled until committed)."""
    try:
        if chunk.silent:
            result = Transcription(text="", extras={}, attempts=0, latency_ms=0.0)
        else:
            result = await _transcribe(chunk, run=run, ctx=ctx)
            run.requests += result.attempts
            ctx.stats.chunks_sent += 1
        await _record_chunk(chunk, result, run=run, ctx=ctx)
    except BaseException as exc:
        run.errors.append(exc)
        if isinstance(exc, RUN_STOP_ERRORS):
            ctx.gate.stop(exc)
        if not isinstance(exc, Exception):
            raise
    finally:
        run.sending -= 1
        held.release()


async def _transcribe(chunk: Chunk, *, run: FileRun, ctx: BatchContext) -> Transcription:
    """One call: a slot for the whole call; the adaptive window and rate cap for each attempt."""

    sent = 0  # attempts of this call that went out

    async def before_attempt() -> None:
        nonlocal sent
        await ctx.gate.pace()  # raises what stopped the run, once it has stopped
        if any(isinstance(error, LeaseLost) for error in run.errors):
            # Another worker owns the file now and sends this chunk itself.
            raise LeaseLost(f"item {run.item.id} was taken over; chunk not sent")
        await run.recorder.require_lease()  # never send on a lease that may have lapsed
        progress_observer().on_request()
        ctx.stats.count_sent(retry=sent > 0)  # counted as the service will see it
        sent += 1

    async with ctx.gate.slot():
        return await ctx.client.transcribe(
            chunk.wav,
            language=run.item.language,
            filename=chunk_filename(chunk.index),
            before_attempt=before_attempt,
            around_attempt=ctx.gate.attempt,
        )


async def _record_chunk(
    chunk: Chunk, result: Transcription, *, run: FileRun, ctx: BatchContext
) -> None:
    """Commit one chunk's answer (the recorder retries a busy store, journals a down one);
    the file's last answer carries the file's end into the same commit."""
    run.texts[chunk.start_ms] = result.text
    extras = {k: v for k, v in result.extras.items() if k != "text"}
    if extras:
        run.extras.append({"chunk": chunk.index, **extras})
    if not is_last_answer(run, ctx=ctx):
        await run.recorder.record_chunk(chunk, result)
        return
    last = ending(run, ctx=ctx)
    if await run.recorder.record_chunk(chunk, result, end=last.end):
        run.ended = last.outcome


async def _finish(run: FileRun, *, ctx: BatchContext) -> FileOutcome:
    """Record the file from its chunk texts (unless its last answer did), or raise the
    error that stopped it."""
    if run.ended is None:
        require_finishable(run, ctx=ctx)
        finished = ending(run, ctx=ctx)
        await run.recorder.finish(finished.end)
        run.ended = finished.outcome
    if run.damage is not None:
        logger.warning("%s is partial: %s", _name(run.item, ctx), run.damage.reason)
    return run.ended


async def _fail(run: FileRun, exc: MedasrError, *, ctx: BatchContext) -> FileOutcome:
    retry_at = datetime.now(UTC) + timedelta(seconds=ctx.pipeline.retry_delay_s)
    await run.recorder.fail(exc, retry_at=retry_at)
    name = _name(run.item, ctx)
    why = reason_about(exc.message, uri=run.item.source_uri, roots=ctx.source_roots)
    # WARNING, as a silent file: both leave a recording to a person (exit code 1).
    logger.warning(
        "%s failed (%s, retryable=%s): %s", name, exc.kind, exc.transient, why, extra=PER_FILE
    )
    return FileOutcome(
        run.item.source_uri,
        ItemStatus.FAILED,
        requests=run.requests,
        error_kind=exc.kind,
        retryable=exc.transient,
        reason=exc.message,
    )


async def _release(recorder: FileRecorder) -> FileOutcome:
    """Give a claimed item back untouched (the run stopped, or its audio cap is reached)."""
    await recorder.release()
    return FileOutcome(recorder.item.source_uri, "released")


def _name(item: ItemRecord, ctx: BatchContext) -> str:
    """The item as a person knows it: its path in the source, escaped."""
    return recording_name(item.source_uri, roots=ctx.source_roots)
