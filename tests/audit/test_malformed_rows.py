"""One malformed row (SQLite keeps whatever is written: a time with trailing text, a path
stored as a BLOB) does not crash `medasr audit verify` or `medasr audit`: verify names
the event and exits 1; the listing shows the rest and names it."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from audit import AuditAction, record_event
from audit.verify import anchor_line
from flows.cli import app
from storage.interface import UnitOfWorkFactory
from tests.audit.tampering import tamper

MALFORMED = {
    "time": "UPDATE audit_events SET occurred_at = occurred_at || ' and then some' WHERE seq = 3",
    "blob": "UPDATE audit_events SET path = CAST('ward/3.wav' AS BLOB) WHERE seq = 3",
}


@pytest.fixture
def trail(audit_store: UnitOfWorkFactory, audit_store_url: str, monkeypatch) -> str:
    if not audit_store_url.startswith("sqlite"):
        pytest.skip("PostgreSQL checks each column's type on write")
    for number in range(1, 6):
        with audit_store.unit_of_work() as uow:
            record_event(
                uow,
                action=AuditAction.DELIVERED,
                actor=f"os:user{number}@host",
                item_id=number,
                path=f"ward/{number}.wav",
                target="docs",
            )
    monkeypatch.setenv("MEDASR_DATABASE_URL", audit_store_url)
    monkeypatch.delenv("MEDASR_CONFIG", raising=False)
    return audit_store_url


@pytest.mark.parametrize("kind", sorted(MALFORMED))
def test_verify_names_a_malformed_event_and_exits_1(trail: str, kind: str) -> None:
    tamper(trail, MALFORMED[kind])
    result = CliRunner().invoke(app, ["audit", "verify"])
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "broken at event 3: it cannot be read" in result.stdout


@pytest.mark.parametrize("kind", sorted(MALFORMED))
@pytest.mark.parametrize("export_format", ["table", "jsonl", "csv"])
def test_the_listing_shows_the_rest_and_names_the_malformed_event(
    trail: str, kind: str, export_format: str
) -> None:
    tamper(trail, MALFORMED[kind])
    result = CliRunner().invoke(app, ["audit", "--format", export_format])
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "os:user5@host" in result.stdout
    assert "event 3 cannot be read" in result.output


def test_verify_says_how_many_events_and_when_the_newest_was_written(trail: str) -> None:
    result = CliRunner().invoke(app, ["audit", "verify"])
    assert result.exit_code == 0, result.output
    assert "5 event(s)" in result.stdout
    assert "the newest written 20" in result.stdout


def test_the_nightly_anchor_line_names_the_newest_hash_count_and_time(
    trail: str, audit_store: UnitOfWorkFactory
) -> None:
    line = anchor_line(audit_store)
    with audit_store.unit_of_work(read_only=True) as uow:
        newest = uow.audit.newest_event()
    assert newest is not None
    assert line.startswith(f"audit anchor {newest.hash} (5 event(s), the newest written ")
    tamper(trail, MALFORMED["time"])
    assert anchor_line(audit_store).startswith("audit trail broken at event 3")
