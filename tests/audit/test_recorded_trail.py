"""A trail written before: its hashed form is a contract with every trail already kept.

`recorded_trail.json` holds the raw rows of `audit_events` as the writer of migration
0009 wrote them (SQLite, the database's clock in milliseconds), and one more event
hashed by that code's `event_hash` with a time in microseconds, as PostgreSQL's clock
gives. Any change to what an event's hash covers, or how its canonical form is spelled
(key names, order, separators, time format, non-ASCII), makes these tests fail: a
hospital's trail written by an older medasr must still verify.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, insert
from typer.testing import CliRunner

from audit import AuditAction, record_event
from flows.cli import app
from storage.audit_chain import recompute_hash
from storage.audit_records import AuditEvent
from storage.database import normalize_database_url
from storage.interface import UnitOfWorkFactory
from storage.models import AuditEventRow

RECORDED = Path(__file__).with_name("recorded_trail.json")


def recorded_rows() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads(RECORDED.read_text(encoding="utf-8"))
    for row in rows:
        row["occurred_at"] = datetime.fromisoformat(row["occurred_at"] + "+00:00")
    return rows


@pytest.fixture
def recorded_trail(audit_store: UnitOfWorkFactory, audit_store_url: str, monkeypatch) -> str:
    """The recorded rows inserted as they are; MEDASR_DATABASE_URL points at them."""
    engine = create_engine(normalize_database_url(audit_store_url))
    try:
        with engine.begin() as connection:
            connection.execute(insert(AuditEventRow.__table__), recorded_rows())
    finally:
        engine.dispose()
    monkeypatch.setenv("MEDASR_DATABASE_URL", audit_store_url)
    monkeypatch.delenv("MEDASR_CONFIG", raising=False)
    return audit_store_url


def verify(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["audit", "verify", *args])
    return result.exit_code, result.stdout


def test_each_recorded_event_hashes_as_it_was_written() -> None:
    for row in recorded_rows():
        assert recompute_hash(AuditEvent(**row)) == row["hash"], row["seq"]


def test_a_recorded_trail_verifies(recorded_trail: str) -> None:
    newest = recorded_rows()[-1]["hash"]

    code, out = verify()

    assert code == 0, out
    assert out.startswith(f"audit trail whole: 8 event(s), newest hash {newest}")


def test_a_recorded_trail_goes_on_with_new_events_and_its_anchor_holds(
    recorded_trail: str, audit_store: UnitOfWorkFactory
) -> None:
    anchor = recorded_rows()[3]["hash"]
    with audit_store.unit_of_work() as uow:
        record_event(uow, action=AuditAction.LOGOUT, actor="alice")
    with audit_store.unit_of_work(read_only=True) as uow:
        newest = uow.audit.newest_event()
    assert newest is not None
    assert (newest.seq, newest.prev_hash) == (9, recorded_rows()[-1]["hash"])

    assert verify()[0] == 0
    assert verify("--since-anchor", anchor)[0] == 0
