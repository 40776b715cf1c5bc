"""Per-file queries find their rows through an index, whatever the store's size.

A run asks the store a few questions per file (its item, a done twin with the same
content, its finished chunks, the renewal of its lease). Each must be an index search:
a plan that scans the items table or sorts in a temporary B-tree costs in proportion to
the archive, under the one write lock, for every file. The plans are read on SQLite
with and without statistics (a store never analyzed must not pick the wrong index) and
on PostgreSQL, analyzed, with sequential scans priced out (the table here is small; what
matters is that an index can answer).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from storage.database import Store
from storage.interface import UnitOfWork
from storage.query_plans import QueryPlan, explain_call, refresh_statistics
from storage.records import SourceFile

LANG = "en-IN"
DONE = 300  # done rows with distinct content, then a few of every other kind
TOKEN = "token-of-a-claim"

# The per-file questions of a run (tasks/transcription, tasks/discovery, tasks/work).
PER_FILE: dict[str, Callable[[UnitOfWork], Any]] = {
    "find_done_with_sha": lambda uow: uow.item_queries.find_done_with_sha(
        sha256=_sha(7), language=LANG
    ),
    "find_done_with_sha (none)": lambda uow: uow.item_queries.find_done_with_sha(
        sha256="f" * 64, language=LANG
    ),
    "find_item": lambda uow: uow.item_queries.find_item(source_uri=_uri(7), language=LANG),
    "find_items": lambda uow: uow.item_queries.find_items(
        source_uris=[_uri(7), _uri(8)], language=LANG
    ),
    "get_item": lambda uow: uow.item_queries.get_item(7),
    "done_chunks": lambda uow: uow.chunks.done_chunks(7),
    "renew_leases": lambda uow: uow.claims.renew_leases([TOKEN], lease_s=60),
}


def _sha(i: int) -> str:
    return f"{i:064x}"


def _uri(i: int) -> str:
    return f"/archive/2026/{i % 12:02d}/{i}.wav"


def _fill(store: Store) -> None:
    """DONE done items (distinct content), then pending, failed and processing ones."""
    files = [SourceFile(_uri(i), 1000, "v1") for i in range(DONE + 60)]
    with store.unit_of_work() as uow:
        uow.items.register_items(files, language=LANG)
    with store.unit_of_work() as uow:
        items = uow.claims.claim_batch(owner="w", language=LANG, limit=DONE + 40, lease_s=600)
    with store.unit_of_work() as uow:
        for n, item in enumerate(items):
            token = item.lease_token
            uow.claims.set_fingerprint(item.id, sha256=_sha(n), size_bytes=1000, lease_token=token)
            if n < DONE:
                uow.claims.finish_item(item.id, lease_token=token, text="t", duration_ms=1000,
                                 chunk_count=1, extras={})  # fmt: skip
            elif n < DONE + 20:
                uow.claims.fail_item(item.id, lease_token=token, error_kind="ServiceUnavailable",
                               message="m", retryable=True,
                               next_attempt_at=datetime.now(UTC) + timedelta(hours=1))  # fmt: skip


# Keys that name rows one by one: a sort of what they find sorts only the rows asked for.
_NAMING_KEYS = ("sqlite_autoindex_items", "uq_items_source_uri", "PRIMARY KEY", "items_pkey")


def _problems(plans: list[QueryPlan], *, dialect: str) -> list[str]:
    """The plan steps that grow with the store: a scan of items, or a sort of rows an
    index search by status or content found (a sort of rows named by their key is not)."""
    found = []
    for plan in plans:
        named = all(
            any(key in step for key in _NAMING_KEYS)
            for step in plan.plan
            if "items" in step and ("SEARCH" in step or "Index" in step)
        )
        for step in plan.plan:
            if dialect == "sqlite":
                scan = step.startswith("SCAN items")
                sort = "TEMP B-TREE" in step
            else:
                scan = "Seq Scan on items" in step
                sort = step.lstrip(" ->").startswith("Sort")
            if scan or (sort and not named):
                found.append(f"{step!r} in {plan.statement[:160]}")
    return found


@pytest.fixture
def filled(store: Store) -> Store:
    _fill(store)
    return store


def _settings(store: Store) -> tuple[str, ...]:
    if store.engine.dialect.name == "postgresql":
        return ("SET LOCAL enable_seqscan = off",)
    return ()


@pytest.mark.parametrize("analyzed", [False, True], ids=["never-analyzed", "analyzed"])
def test_every_per_file_query_searches_an_index(filled: Store, analyzed: bool) -> None:
    if not analyzed and filled.engine.dialect.name == "postgresql":
        # Its autovacuum analyzes a table by itself, and medasr right after registering:
        # unlike SQLite's, a PostgreSQL table without statistics lives only for moments,
        # and a planner without them guesses any index fits a table it thinks is empty.
        pytest.skip("PostgreSQL keeps statistics by itself")
    if analyzed:
        refresh_statistics(filled)
    problems = []
    for name, call in PER_FILE.items():
        plans = explain_call(filled, call, settings=_settings(filled))
        assert plans, f"{name} sent no query"
        problems += [f"{name}: {p}" for p in _problems(plans, dialect=filled.engine.dialect.name)]
    assert not problems, "per-file queries that scan or sort the items:\n" + "\n".join(problems)


def test_the_twin_lookup_uses_the_covering_index(filled: Store) -> None:
    if filled.engine.dialect.name == "postgresql":
        refresh_statistics(filled)  # as after registration (and its autovacuum)
    plans = explain_call(filled, PER_FILE["find_done_with_sha"], settings=_settings(filled))
    assert "ix_items_sha256_language_status_done_at" in plans[0].text()


def test_statistics_can_be_refreshed_while_items_are_claimed(filled: Store) -> None:
    refresh_statistics(filled)
    refresh_statistics(filled)  # again: idempotent, and no lock is left behind
    with filled.unit_of_work() as uow:
        assert uow.item_queries.find_done_with_sha(sha256=_sha(3), language=LANG) is not None
