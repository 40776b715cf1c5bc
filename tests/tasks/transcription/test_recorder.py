"""The per-file recorder, transcribe_file's outcomes and the dry run, against the SQL
store on SQLite (a copy of the worker's migrated template), the devserver and real ffmpeg.

The store is observed (tests/helpers/observed_store.py): it can be taken down, as an
unreachable database is, and it counts the units of work the pipeline opens.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile

import storage.sources
from config.settings import PipelineSettings
from devserver import RunningDevServer
from devserver.tone import encode_tone_dictation
from service.client import Transcription, TranscriptionClient, max_wav_bytes_for
from storage.errors import LeaseLost, StoreUnavailable
from storage.interface import UnitOfWorkFactory
from storage.records import ItemRecord
from storage.sources import Fingerprint, list_audio
from tasks.audio import Chunk
from tasks.throttle.gate import RequestGate
from tasks.transcription.backlog_plan import Plan, plan_backlog
from tasks.transcription.file_run import BatchContext, process_batch
from tasks.transcription.progress import FileOutcome
from tasks.transcription.recorder import FileEnd, FileRecorder
from tasks.work.journal import Journal, replay_journal
from tasks.work.lease_keeper import LeaseKeeper
from tests.helpers.observed_store import ObservedStore
from tests.servers import client_settings

LANG = "en-IN"
CAP_BYTES = 224_000  # ~7 s of 16 kHz audio per chunk: several chunks per dictation
TEXT = " ".join(f"item {i}. pulse regular, chest clear." for i in range(1, 7))
SHA = "c" * 64


@pytest.fixture
def store(store: UnitOfWorkFactory) -> ObservedStore:
    """The SQLite store of tests/conftest.py, observed (its outage and its count)."""
    return ObservedStore(store)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    made = tmp_path / "in"
    made.mkdir()
    soundfile.write(made / "note.wav", encode_tone_dictation(TEXT), 16000, subtype="PCM_16")
    return made


def register_and_claim(
    store: ObservedStore, folder: Path | str, storage_options: dict[str, Any] | None = None
) -> list[ItemRecord]:
    listing = list_audio(str(folder), settle_s=0, storage_options=storage_options)
    with store.unit_of_work() as uow:
        uow.items.register_items(listing.files, language=LANG)
        return uow.claims.claim_batch(owner="unit", language=LANG, limit=10, lease_s=60)


def run_batch(
    store: ObservedStore,
    server: RunningDevServer,
    folder: Path | str,
    *,
    journal: Journal,
    gate: RequestGate | None = None,
    storage_options: dict[str, Any] | None = None,
    contexts: list[BatchContext] | None = None,
) -> dict[str, FileOutcome]:
    """Register the folder, claim it all and process one batch; outcomes by file name
    (the batch's context appended to `contexts`)."""

    async def go() -> list[FileOutcome]:
        settings = client_settings(server, max_upload_bytes=CAP_BYTES)
        async with TranscriptionClient(*settings) as client:
            ctx = BatchContext(
                pipeline=PipelineSettings(settle_s=0, concurrency=1, retry_delay_s=0),
                store=store,
                client=client,
                gate=gate or RequestGate(concurrency=1),
                owner="unit",
                lease_s=60,
                journal=journal,
                store_retry_s=0.2,
                storage_options=storage_options,
            )
            if contexts is not None:
                contexts.append(ctx)
            try:
                items = register_and_claim(store, folder, storage_options)
                return await process_batch(items, ctx=ctx)
            finally:
                await ctx.aclose()

    return {Path(o.source_uri).name: o for o in asyncio.run(go())}


def stored(store: ObservedStore, name: str) -> ItemRecord:
    """The item of the file called `name`, as the store holds it now."""
    with store.unit_of_work(read_only=True) as uow:
        uri = next(uri for uri in uow.item_queries.source_uris() if Path(uri).name == name)
        found = uow.item_queries.find_item(source_uri=uri, language=LANG)
    assert found is not None
    return found


def answered(server: RunningDevServer) -> int:
    return sum(entry.status == 200 for entry in server.ledger.entries())


def test_each_file_of_a_batch_ends_done_skipped_or_failed(
    store: ObservedStore, devserver_factory, folder: Path, tmp_path: Path
) -> None:
    soundfile.write(folder / "quiet.wav", np.zeros(16000 * 3, dtype=np.int16), 16000)
    (folder / "broken.mp3").write_bytes(b"\xff\xfb" + b"\x00" * 300)
    server = devserver_factory()

    outcomes = run_batch(store, server, folder, journal=Journal(tmp_path / "journal"))

    assert {name: o.outcome for name, o in outcomes.items()} == {
        "note.wav": "done",
        "quiet.wav": "skipped",
        "broken.mp3": "failed",
    }
    note = stored(store, "note.wav")
    assert (note.status, note.text, note.lease_token) == ("done", TEXT, None)
    assert answered(server) == note.chunk_count == outcomes["note.wav"].chunks
    assert stored(store, "quiet.wav").error_kind == outcomes["quiet.wav"].error_kind
    broken = stored(store, "broken.mp3")
    assert (broken.status, broken.error_kind) == ("failed", outcomes["broken.mp3"].error_kind)


def test_a_remote_file_is_read_once_to_fetch_and_fingerprint(
    store: ObservedStore,
    s3_server,
    s3_bucket: str,
    devserver_factory,
    folder: Path,
    tmp_path: Path,
    monkeypatch,
) -> None:
    s3_server.client().upload_file(str(folder / "note.wav"), s3_bucket, "night/note.wav")
    hashed: list[int] = []
    copy_hashing = storage.sources._copy_hashing

    def counted(handle: Any, out: Any) -> tuple[str, int]:
        digest, size = copy_hashing(handle, out)
        hashed.append(size)
        return digest, size

    monkeypatch.setattr(storage.sources, "_copy_hashing", counted)
    source = f"s3://{s3_bucket}/night"

    outcomes = run_batch(
        store, devserver_factory(), source, journal=Journal(tmp_path / "journal"),
        storage_options=s3_server.storage_options,
    )  # fmt: skip

    assert outcomes["note.wav"].outcome == "done"
    assert hashed == [(folder / "note.wav").stat().st_size]  # was twice: copy, then copy's hash
    assert stored(store, "note.wav").text == TEXT


def test_content_done_under_another_name_is_reused_and_nothing_is_sent(
    store: ObservedStore, devserver_factory, folder: Path, tmp_path: Path
) -> None:
    journal = Journal(tmp_path / "journal")
    run_batch(store, devserver_factory(), folder, journal=journal)
    shutil.copy(folder / "note.wav", folder / "copy.wav")
    again = devserver_factory()

    outcomes = run_batch(store, again, folder, journal=journal)

    assert outcomes["copy.wav"].outcome == "done"
    assert again.ledger.entries() == []
    copy = stored(store, "copy.wav")
    assert (copy.text, copy.extras) == (TEXT, {"reused_from": str(folder / "note.wav")})


def test_rejected_credentials_release_the_file_and_keep_its_paid_chunks(
    store: ObservedStore, devserver_factory, folder: Path, tmp_path: Path
) -> None:
    server = devserver_factory(auth_fail_after=2)
    gate = RequestGate(concurrency=1)

    outcomes = run_batch(store, server, folder, journal=Journal(tmp_path / "j"), gate=gate)

    assert outcomes["note.wav"].outcome == "released"
    note = stored(store, "note.wav")
    assert (note.status, note.attempts, note.lease_token) == ("pending", 0, None)
    with store.unit_of_work(read_only=True) as uow:
        assert len(uow.chunks.done_chunks(note.id)) == answered(server) == 2


def test_a_file_costs_one_store_call_to_settle_its_content_one_per_chunk_and_one_to_finish(
    store: ObservedStore, devserver_factory, folder: Path, tmp_path: Path
) -> None:
    server = devserver_factory()
    before, contexts = store.transactions, []
    journal = Journal(tmp_path / "journal")

    outcomes = run_batch(store, server, folder, journal=journal, contexts=contexts)

    chunks = outcomes["note.wav"].chunks
    assert chunks > 2
    writer = contexts[0].writer  # the calls share commits with whatever else is in flight
    claim, lease_renewal = 1, 1  # once per batch, not per file (the renewal in a group too)
    assert writer.calls == 1 + chunks + 1 + lease_renewal
    assert 1 <= writer.groups <= writer.calls
    assert store.transactions - before == claim + writer.groups
    assert list(journal.entries()) == []  # every answer committed: no entry left behind


def test_a_copy_of_answered_content_costs_one_store_call_in_a_shared_commit(
    store: ObservedStore, devserver_factory, folder: Path, tmp_path: Path
) -> None:
    journal = Journal(tmp_path / "journal")
    run_batch(store, devserver_factory(), folder, journal=journal)
    copies = 6
    for i in range(copies):
        os.link(folder / "note.wav", folder / f"copy{i}.wav")
    again, before, contexts = devserver_factory(), store.transactions, []

    outcomes = run_batch(store, again, folder, journal=journal, contexts=contexts)

    assert [o.outcome for o in outcomes.values()] == ["done"] * copies
    assert again.ledger.entries() == []
    writer = contexts[0].writer  # a stat, a hash and the lookup: one savepoint each
    claim, lease_renewal = 1, 1
    assert writer.calls == copies + lease_renewal
    assert store.transactions - before == claim + writer.groups


def test_the_dry_run_counts_exactly_what_the_run_then_sends(
    store: ObservedStore, devserver_factory, folder: Path, tmp_path: Path
) -> None:
    journal = Journal(tmp_path / "journal")

    def plan() -> Plan:
        return plan_backlog(
            source=str(folder), language=LANG, store=store, max_wav_bytes=wav_bytes,
            min_pause_ms=PipelineSettings().min_pause_ms, settle_s=0,
        )  # fmt: skip

    first = devserver_factory(auth_fail_after=2)
    wav_bytes = max_wav_bytes(first)  # the run's own cap
    fresh = plan()
    run_batch(store, first, folder, journal=journal, gate=RequestGate(concurrency=1))
    partly = plan()  # two chunks answered before the credentials stop
    healthy = devserver_factory()
    outcomes = run_batch(store, healthy, folder, journal=journal)
    shutil.copy(folder / "note.wav", folder / "copy.wav")
    after = plan()

    assert fresh.requests == outcomes["note.wav"].chunks > 2
    assert (partly.to_transcribe, partly.requests) == (1, fresh.requests - 2)
    assert answered(healthy) == partly.requests
    assert (after.unchanged, after.reused, after.requests) == (1, 1, 0)


def max_wav_bytes(server: RunningDevServer) -> int:
    return max_wav_bytes_for(*client_settings(server, max_upload_bytes=CAP_BYTES))


# --- the recorder on its own ---------------------------------------------------------


def recorder_of(store: ObservedStore, item: ItemRecord, journal: Journal) -> FileRecorder:
    keeper = LeaseKeeper(store=store, lease_s=60)
    return FileRecorder(item, store=store, leases=keeper, journal=journal, store_retry_s=0.1)


def chunk(index: int, *, silent: bool = False) -> Chunk:
    wav = b"RIFF" + b"\x00" * 40
    return Chunk(
        index=index,
        start_sample=index * 16_000,
        end_sample=(index + 1) * 16_000,
        start_ms=index * 1000,
        end_ms=(index + 1) * 1000,
        wav=wav,
        silent=silent,
        voiced_ms=0 if silent else 900,
    )


ANSWER = Transcription(text="stable", extras={"txn_id": "t-1"}, attempts=1, latency_ms=3.0)


def test_a_paid_answer_goes_to_the_journal_while_the_store_is_down_and_is_recorded_later(
    store: ObservedStore, folder: Path, tmp_path: Path
) -> None:
    journal = Journal(tmp_path / "journal")
    (item,) = register_and_claim(store, folder)
    recorder = recorder_of(store, item, journal)

    async def go() -> None:
        await recorder.settle_content(Fingerprint(SHA, 10))
        store.down = True
        with pytest.raises(StoreUnavailable, match="kept in the journal"):
            await recorder.record_chunk(chunk(0), ANSWER)
        with pytest.raises(StoreUnavailable):  # a silent chunk was free: nothing to keep
            await recorder.record_chunk(chunk(1, silent=True), ANSWER)

    asyncio.run(go())
    kept = [paid for _, paid in journal.entries()]
    assert [(p.index, p.text, p.sha256, p.txn_id) for p in kept if p] == [(0, "stable", SHA, "t-1")]
    store.down = False
    assert replay_journal(store, journal).recorded == 1
    with store.unit_of_work(read_only=True) as uow:
        assert {i: c.text for i, c in uow.chunks.done_chunks(item.id).items()} == {0: "stable"}


def test_the_recorder_writes_nothing_once_its_claim_was_taken_over(
    store: ObservedStore, folder: Path, tmp_path: Path
) -> None:
    (item,) = register_and_claim(store, folder)
    with store.unit_of_work() as uow:
        assert item.lease_token is not None
        uow.claims.release_items([item.lease_token])
        uow.claims.claim_batch(owner="rival", language=LANG, limit=1, lease_s=60)
    recorder = recorder_of(store, item, Journal(tmp_path / "journal"))

    async def go() -> None:
        with pytest.raises(LeaseLost):
            await recorder.settle_content(Fingerprint(SHA, 10))
        with pytest.raises(LeaseLost):
            await recorder.record_chunk(chunk(0), ANSWER)
        await recorder.release()  # another's claim: left alone

    asyncio.run(go())
    now = stored(store, "note.wav")
    assert (now.status, now.lease_owner, now.sha256) == ("processing", "rival", None)
    assert list(Journal(tmp_path / "journal").entries()) == []


def test_a_file_ends_in_its_last_answers_commit(
    store: ObservedStore, devserver_factory, tmp_path: Path
) -> None:
    """A one-chunk dictation: its content settled, then its answer and its end in one
    commit (they were two), with the same transcript and outcome."""
    short = tmp_path / "short"
    short.mkdir()
    soundfile.write(short / "brief.wav", encode_tone_dictation("pulse regular"), 16000)
    contexts: list[BatchContext] = []
    journal = Journal(tmp_path / "journal")

    outcomes = run_batch(store, devserver_factory(), short, journal=journal, contexts=contexts)

    assert (outcomes["brief.wav"].outcome, outcomes["brief.wav"].chunks) == ("done", 1)
    item = stored(store, "brief.wav")
    assert (item.status, item.text, item.lease_token) == ("done", "pulse regular", None)
    writer = contexts[0].writer
    settle, answer, end, lease_renewal = 1, 1, 1, 1
    assert writer.calls == settle + answer + end + lease_renewal
    assert writer.groups == writer.calls - 1  # the answer and the end: one commit
    assert list(journal.entries()) == []


def test_the_recorder_finishes_with_the_last_answer_and_lets_the_claim_go(
    store: ObservedStore, folder: Path, tmp_path: Path
) -> None:
    (item,) = register_and_claim(store, folder)
    recorder = recorder_of(store, item, Journal(tmp_path / "journal"))
    end = FileEnd("stable", 1000, 1, {}, ())

    async def go() -> bool:
        await recorder.settle_content(Fingerprint(SHA, 10))
        return await recorder.record_chunk(chunk(0), ANSWER, end=end)

    assert asyncio.run(go()) is True
    now = stored(store, "note.wav")
    assert (now.status, now.text, now.lease_token) == ("done", "stable", None)
    with store.unit_of_work(read_only=True) as uow:
        assert {i: c.text for i, c in uow.chunks.done_chunks(item.id).items()} == {0: "stable"}
