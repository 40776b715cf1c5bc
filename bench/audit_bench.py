"""The audit trail's costs and the purge at scale, on SQLite files in a temporary folder.

1. cost: `medasr deliver` of N transcripts to the devserver with audit events (one per
   delivery, in the transaction that records it) and with `record_event` made a no-op,
   alternating, best of R each; a `medasr run` writes no event per file, so its share is
   the rerun's one event per command.
2. verify: `medasr audit verify` over E events appended through the real writer.
3. purge: P done recordings (1 KB of text and one chunk each) purged, with the wall time,
   the peak of Python's allocations (tracemalloc) and the process's peak RSS.

    .venv/bin/python bench/audit_bench.py [--deliveries 500] [--events 100000]
                                          [--recordings 20000] [--rounds 3]
Targets (full scale): cost <= 2 % of a run; verify 10^6 events <= 30 s; purge 10^5
recordings <= 60 s with flat memory.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import sys
import tempfile
import time
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tasks.delivery.audit_trail as delivery_trail
from audit import AuditAction, record_event
from audit.verify import verify_trail
from config.settings import DeliverySettings, PipelineSettings, Settings, StorageSettings
from service.devserver import start_devserver
from storage import open_store
from storage.interface import UnitOfWorkFactory
from tasks.delivery.deliverer import deliver_pending
from tasks.retention.durations import parse_retention
from tasks.retention.recording_purge import PurgeRequest, purge_recordings
from tests.servers import client_settings
from tests.tasks.delivery.delivery_helpers import make_done


def bench_cost(folder: Path, *, deliveries: int, rounds: int) -> dict[str, float]:
    """CPU seconds (this process: medasr and the in-process devserver) per deliver of
    `deliveries` documents, with events and without; the best of `rounds` each. CPU, not
    wall: on a shared machine the wall time moves more than the difference."""
    best: dict[str, float] = {"with events": float("inf"), "without": float("inf")}
    real = delivery_trail.record_event
    with start_devserver(token="bench-token", port=0) as server:
        service, encryption = client_settings(server, token="bench-token")
        for number in range(rounds * 2):
            label = "with events" if number % 2 == 0 else "without"
            url = f"sqlite:///{folder / f'cost-{number}.db'}"
            store = open_store(StorageSettings(database_url=url))
            make_done(store, {f"/a/{i:05d}.wav": f"note {i}" for i in range(deliveries)})
            settings = Settings(
                service=service, encryption=encryption,
                storage=StorageSettings(database_url=url, data_dir=folder / "data"),
                pipeline=PipelineSettings(concurrency=8), delivery=DeliverySettings(),
            )  # fmt: skip
            delivery_trail.record_event = real if label == "with events" else _no_event  # type: ignore[assignment]
            started = time.perf_counter()
            asyncio.run(
                deliver_pending(
                    settings=settings,
                    store=store,
                    language=None,
                    format_name="txt",
                    allow_unlinked=True,  # bench recordings have no manifest
                )
            )
            best[label] = min(best[label], time.perf_counter() - started)
            store.dispose()
    delivery_trail.record_event = real  # type: ignore[assignment]
    return best


def _no_event(*_args: object, **_kwargs: object) -> None:
    """record_event that writes nothing (the baseline)."""


def bench_verify(folder: Path, *, events: int) -> tuple[float, float]:
    """(CPU seconds to append `events` through the writer, CPU seconds to verify them)."""
    store = open_store(StorageSettings(database_url=f"sqlite:///{folder / 'verify.db'}"))
    started = time.process_time()
    for start in range(0, events, 1_000):
        with store.unit_of_work() as uow:
            for index in range(start, min(start + 1_000, events)):
                record_event(
                    uow, action=AuditAction.DELIVERED, actor="os:bench@host", item_id=index,
                    path=f"ward/{index:07d}.wav", target="docs",
                    detail={"receiver_id": f"doc-{index}", "format": "txt"},
                )  # fmt: skip
    appended = time.process_time() - started
    wall = time.perf_counter()
    started = time.process_time()
    verdict = verify_trail(store)
    verified = time.process_time() - started
    print(f"verify wall {time.perf_counter() - wall:.1f} s (CPU below)")
    assert verdict.whole
    assert verdict.report.events == events
    store.dispose()
    return appended, verified


def seed_recordings(store: UnitOfWorkFactory, url: str, *, recordings: int) -> None:
    """`recordings` done items finished 200 days ago, 1 KB of text and one chunk each."""
    from sqlalchemy import create_engine, text

    from storage.database import normalize_database_url

    engine = create_engine(normalize_database_url(url))
    old = (datetime.now(UTC) - timedelta(days=200)).replace(tzinfo=None)
    body = "patient note " * 80
    with engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO items (source_uri, language, source_version, sha256, size_bytes,"
                " status, retryable, attempts, text, metadata, created_at, updated_at, done_at)"
                " VALUES (:u, 'en-IN', 'v1', :s, 1000, 'done', 0, 1, :t, :m, :d, :d, :d)"
            ),
            [{"u": f"/a/{i:07d}.wav", "s": f"{i:064x}", "t": f"{i} {body}",
              "m": json.dumps({"patient": f"P{i}"}), "d": old} for i in range(recordings)],
        )  # fmt: skip
        connection.execute(
            text(
                'INSERT INTO chunks (item_id, "index", start_ms, end_ms, size_bytes, status,'
                " text, attempts, updated_at) SELECT id, 0, 0, 1000, 10, 'done', text, 1, :d"
                " FROM items"
            ),
            {"d": old},
        )
    engine.dispose()


def bench_purge(folder: Path, *, recordings: int) -> tuple[float, float, float, float]:
    """(wall seconds, CPU seconds, peak traced MB, peak RSS MB) of purging `recordings`."""
    url = f"sqlite:///{folder / f'purge-{recordings}.db'}"
    store = open_store(StorageSettings(database_url=url))
    seed_recordings(store, url, recordings=recordings)
    request = PurgeRequest(retention=parse_retention("90d"), actor="os:bench@host")
    tracemalloc.start()
    started, cpu = time.perf_counter(), time.process_time()
    result = purge_recordings(store, request, journal_folder=folder / "journal")
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    assert result.total == recordings
    store.dispose()
    return seconds, cpu, peak, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--deliveries", type=int, default=500)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--recordings", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="medasr-audit-bench-") as name:
        folder = Path(name)
        cost = bench_cost(folder, deliveries=args.deliveries, rounds=args.rounds)
        share = (cost["with events"] - cost["without"]) / cost["without"] * 100
        print(f"deliver {args.deliveries}: CPU with events {cost['with events']:.2f} s, "
              f"without {cost['without']:.2f} s, audit share {share:+.1f} %")  # fmt: skip
        appended, verified = bench_verify(folder, events=args.events)
        print(f"{args.events} events: CPU appended in {appended:.1f} s "
              f"({appended / args.events * 1e6:.0f} us each), verified in {verified:.1f} s "
              f"({verified / args.events * 1e6:.1f} us each)")  # fmt: skip
        for recordings in (args.recordings // 2, args.recordings):
            seconds, cpu, traced, rss = bench_purge(folder, recordings=recordings)
            print(f"purge {recordings} recordings: {seconds:.1f} s wall, {cpu:.1f} s CPU "
                  f"({seconds / recordings * 1e3:.2f} ms each), peak traced {traced:.1f} MB, "
                  f"peak RSS {rss:.0f} MB")  # fmt: skip


if __name__ == "__main__":
    main()
