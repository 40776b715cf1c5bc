"""transcribe_file / process_batch as plain functions: real devserver, real SQLite, real ffmpeg."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import soundfile

from config.settings import PipelineSettings
from devserver import RunningDevServer
from devserver.tone import encode_tone_dictation
from service.client import RetryEvent, TranscriptionClient
from service.errors import CredentialsRejected, TlsNotVerified
from storage.claims import Claims
from storage.errors import StoreUnavailable
from storage.interface import UnitOfWorkFactory
from storage.sources import list_audio
from tasks.audio import DecoderPool
from tasks.throttle.gate import RequestGate
from tasks.transcription.file_run import CHUNKS_AHEAD_PER_FILE, BatchContext, process_batch
from tests.helpers.audio import ffmpeg
from tests.helpers.transcription import CAP_BYTES, TEXT, item_of, run_once
from tests.servers import client_settings
from tests.service.tls_certs import make_tls_files


@pytest.fixture
def recording(tmp_path: Path) -> Path:
    folder = tmp_path / "in"
    folder.mkdir()
    soundfile.write(folder / "note.wav", encode_tone_dictation(TEXT), 16000, subtype="PCM_16")
    return folder


def test_chunks_joined_in_order_give_the_whole_text(
    store: UnitOfWorkFactory, devserver_factory, recording: Path
) -> None:
    server = devserver_factory()
    outcomes = run_once(store, server, recording)

    assert [o.outcome for o in outcomes] == ["done"]
    row = item_of(store)
    assert row.chunks > 2
    assert row.text == TEXT
    assert sum(1 for e in server.ledger.entries() if e.status == 200) == row.chunks


def test_finished_chunks_are_not_sent_again_after_a_failure(
    store: UnitOfWorkFactory, devserver_factory, recording: Path
) -> None:
    # Two requests succeed, then every request meets a 500 (each chunk's whole budget).
    server = devserver_factory(fault_script=("ok", "ok", *["500"] * 30))
    first = run_once(store, server, recording, concurrency=1, retry_delay_s=0)
    assert (first[0].outcome, first[0].retryable) == ("failed", True)
    sent_ok = {e.sha256 for e in server.ledger.entries() if e.status == 200}
    assert len(sent_ok) == 2

    with store.unit_of_work() as uow:
        assert (
            uow.items.requeue_failures(language="en-IN", max_attempts=5, include_permanent=False)
            == 1
        )
    healthy = devserver_factory()
    second = run_once(store, healthy, recording)

    assert second[0].outcome == "done"
    resent = {e.sha256 for e in healthy.ledger.entries()} & sent_ok
    assert resent == set()
    assert item_of(store).text == TEXT


def test_credentials_rejected_releases_the_item(
    store: UnitOfWorkFactory, devserver_factory, recording: Path
) -> None:
    server = devserver_factory(auth_fail_after=1)
    outcomes = run_once(store, server, recording, concurrency=1)

    assert outcomes[0].outcome == "released"
    row = item_of(store)
    assert row.status == "pending"
    assert row.attempts == 0


def test_unreadable_audio_fails_one_file_and_not_the_batch(
    store: UnitOfWorkFactory, devserver_factory, recording: Path
) -> None:
    (recording / "broken.mp3").write_bytes(b"\xff\xfb" + b"\x00" * 300)
    server = devserver_factory()

    outcomes = {Path(o.source_uri).name: o for o in run_once(store, server, recording)}

    assert outcomes["note.wav"].outcome == "done"
    assert outcomes["broken.mp3"].outcome == "failed"
    assert outcomes["broken.mp3"].retryable is False


def test_mp3_and_m4a_decoded_by_the_libav_workers_leave_no_process_behind(
    store: UnitOfWorkFactory, devserver_factory, recording: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for suffix, codec in ((".mp3", "libmp3lame"), (".m4a", "aac")):
        ffmpeg("-i", str(recording / "note.wav"), "-c:a", codec, "-b:a", "64k",
               str(recording / f"note{suffix}"))  # fmt: skip
    (recording / "broken.mp3").write_bytes(b"ID3" + b"\x00" * 300)
    decoded: list[str] = []
    decode = DecoderPool.decode

    def counted(pool: DecoderPool, path: Path, **kwargs: object) -> object:
        found = decode(pool, path, **kwargs)  # type: ignore[arg-type]
        decoded.extend([path.name] if found is not None else [])
        return found

    monkeypatch.setattr(DecoderPool, "decode", counted)
    server = devserver_factory()
    outcomes = {Path(o.source_uri).name: o for o in run_once(store, server, recording)}

    assert sorted(decoded) == ["note.m4a", "note.mp3"]  # the WAV is read, the rest to ffmpeg
    assert {name: o.outcome for name, o in outcomes.items()} == {
        "note.wav": "done", "note.mp3": "done", "note.m4a": "done", "broken.mp3": "failed"
    }  # fmt: skip
    with store.unit_of_work() as uow:
        texts = {Path(r.source).name: r.text for r in uow.item_queries.export_rows()}
    assert texts["note.mp3"] == texts["note.m4a"] == texts["note.wav"] == TEXT
    assert worker_processes() == []  # the batch's context closed its workers


def worker_processes() -> list[int]:
    """Live decoding workers whose parent is this process."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            command = (stat.parent / "cmdline").read_bytes()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == os.getpid() and fields[0] != "Z" and b"tasks.libav" in command:
            found.append(int(stat.parent.name))
    return found


def test_rate_cap_paces_every_attempt_retries_included(
    store: UnitOfWorkFactory, devserver_factory, recording: Path
) -> None:
    rate = 4.0
    failures = 8
    server = devserver_factory(fault_script=("503",) * failures)
    bucket_filled = time.time()  # the gate's bucket admits nothing before it exists
    gate = RequestGate(concurrency=4, requests_per_s=rate)

    outcomes = run_once(store, server, recording, gate=gate, service={"max_attempts": 12})

    assert [o.outcome for o in outcomes] == ["done"]
    arrivals = sorted(entry.time for entry in server.ledger.entries())
    assert len(arrivals) == failures + item_of(store).chunks
    # A bucket of `rate` requests refilled at `rate` per second: the i-th request (from 0)
    # cannot be sent before (i + 1 - rate) / rate seconds after the bucket was made, and
    # arrives no earlier than it is sent. Retries of the client are requests too. Measured
    # from the bucket, not from the first arrival: a busy host that delays the first
    # arrivals (and not the later ones) would shrink the gaps between arrivals, not the
    # time since the bucket was made.
    for i, arrival in enumerate(arrivals):
        earliest = (i + 1 - rate) / rate
        since_bucket = [round(t - bucket_filled, 2) for t in arrivals]
        assert arrival - bucket_filled >= earliest, (i, since_bucket)


def test_stopped_gate_stops_retries_in_flight(
    store: UnitOfWorkFactory, devserver_factory, recording: Path
) -> None:
    # Every answer is 503; the first one stops the run (as a 403 elsewhere would).
    server = devserver_factory(fault_script=("503",) * 50)
    gate = RequestGate(concurrency=4)

    def stop_at_first_retry(_event: RetryEvent) -> None:
        gate.stop(CredentialsRejected("the service rejected the token; check MEDASR_TOKEN"))

    outcomes = run_once(
        store,
        server,
        recording,
        gate=gate,
        service={"max_attempts": 5},
        on_retry=stop_at_first_retry,
    )

    assert [o.outcome for o in outcomes] == ["released"]
    # Only first attempts that had started before the stop; no retry went out after it.
    sent = server.ledger.entries()
    assert 1 <= len(sent) <= CHUNKS_AHEAD_PER_FILE
    assert len({entry.sha256 for entry in sent}) == len(sent)
    assert item_of(store).status == "pending"


def test_a_lost_lease_stops_the_file_and_sends_nothing_more(
    store: UnitOfWorkFactory, devserver_factory, recording: Path
) -> None:
    # Another worker takes the item over while our first chunk is on the wire: it saw
    # the lease lapse (a store clock an hour on stands for a process stalled that long).
    server = devserver_factory(latency_ms=1500)
    stolen = threading.Event()

    def thief() -> None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with store.unit_of_work(read_only=True) as uow:
                if any(row.sha256 for row in uow.item_queries.export_rows()):
                    break  # fingerprinted: the first chunk goes out now, for 1.5 s
            time.sleep(0.01)
        while server.state.capacity.peak_in_flight == 0 and time.monotonic() < deadline:
            time.sleep(0.01)  # until it reached the service
        later = datetime.now(UTC) + timedelta(hours=1)
        while not stolen.is_set() and time.monotonic() < deadline:
            with store.unit_of_work() as uow:
                if uow.claims.claim_batch(
                    owner="thief", language="en-IN", limit=1, lease_s=600, now=later
                ):
                    stolen.set()
            time.sleep(0.05)

    taker = threading.Thread(target=thief)
    taker.start()
    try:
        outcomes = run_once(store, server, recording, gate=RequestGate(concurrency=1), lease_s=0.5)
    finally:
        stolen.set()
        taker.join()

    assert [o.outcome for o in outcomes] == ["lost"]
    row = item_of(store)
    assert (row.status, row.chunks) == ("processing", None)  # the thief's, untouched
    with store.unit_of_work() as uow:
        assert uow.chunks.done_chunks(1) == {}  # the only item; our late answer was not recorded
    # One request was on the wire when the lease went; the queued chunks were not sent.
    assert len(server.ledger.entries()) == 1


def test_a_store_failure_while_recording_costs_one_file_not_the_batch(
    store: UnitOfWorkFactory, devserver_factory, recording: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (recording / "broken.mp3").write_bytes(b"\xff\xfb" + b"\x00" * 300)

    def locked(*_args: object, **_kwargs: object) -> None:
        raise StoreUnavailable("database is locked")

    # No socket can make SQLite fail on cue: the failure is injected at the repository.
    monkeypatch.setattr(Claims, "fail_item", locked)

    outcomes = {
        Path(o.source_uri).name: o.outcome for o in run_once(store, devserver_factory(), recording)
    }

    assert outcomes == {"note.wav": "done", "broken.mp3": "lost"}


def test_a_queued_file_whose_lease_was_taken_over_is_not_sent(
    store: UnitOfWorkFactory, devserver_factory, recording: Path
) -> None:
    server = devserver_factory()
    with store.unit_of_work() as uow:
        uow.items.register_items(list_audio(str(recording), settle_s=0).files, language="en-IN")
        items = uow.claims.claim_batch(owner="test-owner", language="en-IN", limit=1, lease_s=0.01)
    time.sleep(0.05)  # our claim expires while the file waits for its turn...
    with store.unit_of_work() as uow:  # ...and another worker takes it over
        assert uow.claims.claim_batch(owner="thief", language="en-IN", limit=1, lease_s=600)

    async def go() -> list:
        async with TranscriptionClient(*client_settings(server)) as client:
            ctx = BatchContext(
                pipeline=PipelineSettings(settle_s=0),
                store=store,
                client=client,
                gate=RequestGate(concurrency=4),
                owner="test-owner",
                lease_s=600,
            )
            try:
                return await process_batch(items, ctx=ctx)
            finally:
                ctx.close()

    outcomes = asyncio.run(go())

    assert [o.outcome for o in outcomes] == ["lost"]
    assert server.ledger.entries() == []


def test_cancelling_a_run_mid_file_neither_fails_the_item_nor_hides_the_cancel(
    store: UnitOfWorkFactory, devserver_factory, recording: Path
) -> None:
    server = devserver_factory(latency_ms=300)

    async def go() -> None:
        batch = asyncio.ensure_future(_process(store, server, recording))
        while not server.ledger.entries():  # a chunk is on the wire, others decoding
            await asyncio.sleep(0.01)
        batch.cancel()
        await batch

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(go())
    row = item_of(store)
    assert row.status == "processing"  # left for the lease to give back, not failed
    assert row.error_kind is None


async def _process(store: UnitOfWorkFactory, server: RunningDevServer, folder: Path) -> list:
    with store.unit_of_work() as uow:
        uow.items.register_items(list_audio(str(folder), settle_s=0).files, language="en-IN")
        items = uow.claims.claim_batch(owner="test-owner", language="en-IN", limit=10, lease_s=60)
    return await _process_claimed(store, server, items, lease_s=60)


def test_a_queued_file_renews_its_expired_lease_before_sending(
    store: UnitOfWorkFactory, devserver_factory, recording: Path
) -> None:
    server = devserver_factory(latency_ms=200)
    with store.unit_of_work() as uow:
        uow.items.register_items(list_audio(str(recording), settle_s=0).files, language="en-IN")
        # The claim expired while the file waited for its turn.
        an_hour_ago = datetime.now(UTC) - timedelta(hours=1)
        items = uow.claims.claim_batch(
            owner="test-owner", language="en-IN", limit=1, lease_s=60, now=an_hour_ago
        )
    taken: list[object] = []
    done = threading.Event()

    def rival() -> None:  # another worker looking for expired leases once we are sending
        while not done.is_set() and not server.ledger.entries():
            time.sleep(0.005)
        while not done.is_set():
            with store.unit_of_work() as uow:
                taken.extend(
                    uow.claims.claim_batch(owner="rival", language="en-IN", limit=1, lease_s=60)
                )
            time.sleep(0.02)

    watcher = threading.Thread(target=rival)
    watcher.start()
    try:
        outcomes = asyncio.run(_process_claimed(store, server, items, lease_s=600))
    finally:
        done.set()
        watcher.join()

    assert [o.outcome for o in outcomes] == ["done"]
    assert taken == []  # renewed at its turn: never up for grabs while we sent its chunks


async def _process_claimed(
    store: UnitOfWorkFactory, server: RunningDevServer, items: list, *, lease_s: float
) -> list:
    settings = client_settings(server, max_upload_bytes=CAP_BYTES)
    async with TranscriptionClient(*settings) as client:
        ctx = BatchContext(
            pipeline=PipelineSettings(settle_s=0),
            store=store,
            client=client,
            gate=RequestGate(concurrency=1),
            owner="test-owner",
            lease_s=lease_s,
        )
        try:
            return await process_batch(items, ctx=ctx)
        finally:
            ctx.close()


def test_an_unverified_certificate_stops_the_run_and_fails_no_file(
    store: UnitOfWorkFactory, devserver_factory, recording: Path, tmp_path: Path
) -> None:
    for name in ("second.wav", "third.wav"):
        soundfile.write(recording / name, encode_tone_dictation(name), 16000, subtype="PCM_16")
    (tmp_path / "tls").mkdir()
    tls = make_tls_files(tmp_path / "tls")
    server = devserver_factory(tls_cert_path=tls.server_cert, tls_key_path=tls.server_key)
    gate = RequestGate(concurrency=1)

    # No ca_bundle: the private CA is unknown, so no certificate can verify.
    outcomes = run_once(store, server, recording, gate=gate)

    assert isinstance(gate.stopped, TlsNotVerified)
    assert {o.outcome for o in outcomes} == {"released"}
    with store.unit_of_work() as uow:
        assert {row.status for row in uow.item_queries.export_rows()} == {"pending"}
