"""A worker process for the exactly-once tests: claim, log, finish, until everything is done.

Each line of the log is `claim <id> <attempts>`, `done <id>`, `lost <id>` or `hold`. The
victim worker stops finishing at its `hold_after`-th batch and sleeps with the lease,
waiting to be killed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from config.settings import StorageSettings
from storage import open_store
from storage.errors import LeaseLost
from storage.interface import UnitOfWork, UnitOfWorkFactory
from storage.records import ItemRecord

LANG = "en-IN"


@dataclass(frozen=True)
class WorkerPlan:
    """What one worker process does."""

    database_url: str
    owner: str
    log_path: str
    total_items: int
    batch: int
    lease_s: float
    hold_after: int | None = None  # victim: hold this batch (1-based) forever
    deadline_s: float = 90.0


def run_worker(plan: WorkerPlan) -> None:
    """Process entry point (spawn)."""
    store = open_store(StorageSettings(database_url=plan.database_url))
    deadline = time.monotonic() + plan.deadline_s
    batches = 0
    with open(plan.log_path, "a", encoding="utf-8") as log:
        while time.monotonic() < deadline:
            with store.unit_of_work() as uow:
                items = uow.claims.claim_batch(
                    owner=plan.owner, language=LANG, limit=plan.batch, lease_s=plan.lease_s
                )
            log.writelines(f"claim {item.id} {item.attempts}\n" for item in items)
            log.flush()
            if not items:
                if _all_done(store, plan.total_items):
                    break
                time.sleep(0.05)
                continue
            batches += 1
            if plan.hold_after is not None and batches >= plan.hold_after:
                log.write("hold\n")
                log.flush()
                time.sleep(3600)  # holding the lease until SIGKILL
            for item in items:
                log.write(_finish(store, item, plan.owner))
                log.flush()
    store.dispose()


def _finish(store: UnitOfWorkFactory, item: ItemRecord, owner: str) -> str:
    try:
        with store.unit_of_work() as uow:
            uow.claims.finish_item(
                item.id,
                lease_token=item.lease_token,
                text=owner,
                duration_ms=1,
                chunk_count=1,
                extras={},
            )
    except LeaseLost:
        return f"lost {item.id}\n"
    return f"done {item.id}\n"


def _all_done(store: UnitOfWorkFactory, total_items: int) -> bool:
    with store.unit_of_work(read_only=True) as uow:
        return _done_count(uow) >= total_items


def _done_count(uow: UnitOfWork) -> int:
    return sum(c.items for c in uow.item_queries.status_counts() if c.status == "done")
