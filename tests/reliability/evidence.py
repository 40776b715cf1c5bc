"""Reading what happened: the medasr database (read-only) and the devserver's ledger."""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from devserver import LedgerEntry


def query(database_url: str, sql: str) -> list[dict[str, Any]]:
    """Rows of `sql` as dicts, read without taking any write lock (SQLite or PostgreSQL)."""
    if database_url.startswith("sqlite:///"):
        path = database_url.removeprefix("sqlite:///")
        connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
        connection.row_factory = sqlite3.Row
        try:
            return [dict(row) for row in connection.execute(sql)]
        finally:
            connection.close()
    import psycopg
    from psycopg.rows import dict_row

    _scheme, rest = database_url.split("://", 1)
    with psycopg.connect(f"postgresql://{rest}", row_factory=dict_row) as connection:
        return list(connection.execute(sql))  # type: ignore[arg-type]


def items(database_url: str) -> list[dict[str, Any]]:
    """Every item row."""
    return query(database_url, "SELECT * FROM items ORDER BY id")


def chunks(database_url: str) -> list[dict[str, Any]]:
    """Every chunk row."""
    return query(database_url, 'SELECT * FROM chunks ORDER BY item_id, "index"')


def status_counts(database_url: str) -> dict[str, int]:
    """Items per status (empty before the schema exists)."""
    try:
        rows = query(database_url, "SELECT status, COUNT(*) AS n FROM items GROUP BY status")
    except Exception:
        return {}
    return {row["status"]: int(row["n"]) for row in rows}


def by_sha(entries: Sequence[LedgerEntry]) -> dict[str, list[tuple[int, LedgerEntry]]]:
    """Ledger entries per audio sha256, as (ledger position, entry), in ledger order."""
    grouped: dict[str, list[tuple[int, LedgerEntry]]] = defaultdict(list)
    for position, entry in enumerate(entries):
        if entry.sha256 is not None:
            grouped[entry.sha256].append((position, entry))
    return dict(grouped)


@dataclass(frozen=True)
class Kill:
    """One SIGKILL: when, how many ledger entries there were just before it, and when the
    killed run's last requests had been answered (the next run started after that)."""

    time: float
    ledger_len: int
    settled_at: float


@dataclass(frozen=True)
class ResendAudit:
    """Per chunk: was anything sent after the success that was recorded?"""

    resent_after_recorded: list[str]  # sha256 of chunks sent again after their recorded 200
    lost_in_kill: int  # 200s that a kill cut off before they were recorded (paid, re-sent)
    unexplained: list[str]  # 200s never recorded although no kill explains it


def audit_resends(
    entries: Sequence[LedgerEntry], recorded_txn_ids: set[str], kills: Sequence[Kill]
) -> ResendAudit:
    """Check "no chunk sent again after it had succeeded" with the txn ids the DB kept.

    A 200 whose txn id the database holds is the recorded success: no request for the
    same audio may arrive after it. A 200 the database does not hold must have been cut
    off by a kill (sent by the killed run, and the kill came before the next request) or
    been a deliberately slow answer that the client gave up on. A request's ledger time
    is when the devserver began to handle it: one the killed run sent just before it died
    may begin after the kill, but before the kill settled (no other run was alive).
    """
    resent: list[str] = []
    unexplained: list[str] = []
    lost = 0
    for sha, sent in by_sha(entries).items():
        recorded = [e for _, e in sent if e.status == 200 and e.txn_id in recorded_txn_ids]
        if recorded and any(e.time > recorded[0].time for _, e in sent):
            resent.append(sha)
        for position, entry in sent:
            if entry.status != 200 or entry.txn_id in recorded_txn_ids:
                continue
            if entry.fault == "slow":  # its body came after the client's timeout: a timeout
                continue
            later = [e.time for _, e in sent if e.time > entry.time]
            next_time = min(later, default=float("inf"))
            if any(entry.time < k.settled_at and k.time < next_time for k in kills):
                lost += 1
            else:
                unexplained.append(f"{sha[:12]} at ledger position {position}")
    return ResendAudit(resent, lost, unexplained)
