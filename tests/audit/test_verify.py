"""`medasr audit verify`: 0 on a whole chain; 1 naming the first event an UPDATE, a DELETE
or an INSERT done with raw SQL broke; anchors catch a chain rebuilt from scratch."""

from __future__ import annotations

from dataclasses import replace

import pytest
from sqlalchemy.exc import DBAPIError
from typer.testing import CliRunner

from audit import AuditAction, record_event
from flows.cli import app
from storage.audit_chain import recompute_hash
from storage.interface import UnitOfWorkFactory
from tests.audit.tampering import run_sql, tamper


@pytest.fixture
def trail(audit_store: UnitOfWorkFactory, audit_store_url: str, monkeypatch) -> str:
    """Five events in the store; MEDASR_DATABASE_URL points at it. Returns the URL."""
    for number in range(1, 6):
        with audit_store.unit_of_work() as uow:
            record_event(
                uow,
                action=AuditAction.DELIVERED,
                actor=f"os:user{number}@host",
                item_id=number,
                path=f"ward/{number}.wav",
                target="docs",
                detail={"receiver_id": f"doc-{number}"},
            )
    monkeypatch.setenv("MEDASR_DATABASE_URL", audit_store_url)
    monkeypatch.delenv("MEDASR_CONFIG", raising=False)
    return audit_store_url


def verify(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["audit", "verify", *args])
    return result.exit_code, result.stdout


def test_a_fresh_trail_is_whole(trail: str) -> None:
    code, out = verify()
    assert code == 0, out
    assert out.startswith("audit trail whole: 5 event(s), newest hash ")


def test_an_updated_event_is_named(trail: str) -> None:
    tamper(trail, "UPDATE audit_events SET actor = 'os:mallory@host' WHERE seq = 3")
    code, out = verify()
    assert code == 1
    assert "broken at event 3: its content does not match its hash" in out


def test_a_deleted_event_is_named_by_the_one_after_it(trail: str) -> None:
    tamper(trail, "DELETE FROM audit_events WHERE seq = 3")
    code, out = verify()
    assert code == 1
    assert "broken at event 4: its sequence number follows 2" in out


def test_an_event_inserted_out_of_order_is_named(trail: str) -> None:
    # A forged event claiming to follow event 2, appended at the end.
    tamper(
        trail,
        "INSERT INTO audit_events (seq, occurred_at, actor, action, item_id, path, target, "
        "detail, prev_hash, hash) SELECT 6, occurred_at, actor, action, item_id, path, target, "
        "detail, hash, :forged FROM audit_events WHERE seq = 2",
        params={"forged": "f" * 64},
    )
    code, out = verify()
    assert code == 1
    assert "broken at event 6: it does not name the hash of the event before it" in out


def test_an_event_inserted_before_the_first_is_named(trail: str) -> None:
    tamper(
        trail,
        "INSERT INTO audit_events (seq, occurred_at, actor, action, prev_hash, hash) "
        "SELECT 0, occurred_at, 'os:mallory@host', 'login', prev_hash, :forged "
        "FROM audit_events WHERE seq = 1",
        params={"forged": "e" * 64},
    )
    code, out = verify()
    assert code == 1
    assert "broken at event 0" in out


def test_a_rebuilt_chain_passes_alone_but_fails_against_its_anchor(
    trail: str, audit_store: UnitOfWorkFactory
) -> None:
    code, anchor = verify("--anchor")
    assert code == 0
    anchor = anchor.strip()
    assert len(anchor) == 64
    assert verify("--since-anchor", anchor)[0] == 0
    # Someone with write access edits event 3 and recomputes every hash from there on.
    with audit_store.unit_of_work(read_only=True) as uow:
        events = list(uow.audit.chain())
    previous = events[1].hash
    statements = []
    for event in events[2:]:
        actor = "os:mallory@host" if event.seq == 3 else event.actor
        rebuilt = recompute_hash(replace(event, actor=actor, prev_hash=previous))
        statements.append(
            f"UPDATE audit_events SET actor = '{actor}', prev_hash = '{previous}', "
            f"hash = '{rebuilt}' WHERE seq = {event.seq}"
        )
        previous = rebuilt
    tamper(trail, *statements)
    assert verify()[0] == 0  # the chain alone cannot tell
    code, out = verify("--since-anchor", anchor)
    assert code == 1
    assert f"does not contain the anchor {anchor}" in out


def test_a_malformed_anchor_is_a_usage_error(trail: str) -> None:
    result = CliRunner().invoke(app, ["audit", "verify", "--since-anchor", "nothex"])
    assert result.exit_code == 2
    assert "64 hex digits" in result.stderr


@pytest.mark.parametrize(
    "statement",
    ["UPDATE audit_events SET actor = 'x' WHERE seq = 1", "DELETE FROM audit_events WHERE seq = 1"],
)
def test_the_table_refuses_update_and_delete_without_lifting_its_triggers(
    trail: str, statement: str
) -> None:
    with pytest.raises(DBAPIError, match="append-only"):
        run_sql(trail, statement)
    assert verify()[0] == 0
