"""`medasr audit verify` walks every page of the chain, and checks each event's link to
the one before it, not only its own hash (each control fails its own test if removed)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from storage import audit_log
from storage.audit_chain import recompute_hash
from storage.interface import UnitOfWorkFactory
from tests.audit.tampering import tamper
from tests.audit.test_verify import trail, verify

__all__ = ["trail"]  # the five-event fixture, shared


@pytest.mark.parametrize("edited", [2, 3, 5])
def test_an_edit_on_a_later_page_is_found(
    trail: str, monkeypatch: pytest.MonkeyPatch, edited: int
) -> None:
    monkeypatch.setattr(audit_log, "_PAGE", 2)  # five events: three pages
    assert verify()[1].startswith("audit trail whole: 5 event(s)")
    tamper(trail, f"UPDATE audit_events SET actor = 'os:mallory@host' WHERE seq = {edited}")
    code, out = verify()
    assert code == 1
    assert f"broken at event {edited}: its content does not match its hash" in out


def test_an_event_edited_with_its_own_hash_recomputed_breaks_the_next_link(
    trail: str, audit_store: UnitOfWorkFactory
) -> None:
    with audit_store.unit_of_work(read_only=True) as uow:
        third = list(uow.audit.chain())[2]
    forged = recompute_hash(replace(third, actor="os:mallory@host"))
    tamper(
        trail,
        f"UPDATE audit_events SET actor = 'os:mallory@host', hash = '{forged}' WHERE seq = 3",
    )
    code, out = verify()
    assert code == 1
    assert "broken at event 4: it does not name the hash of the event before it" in out
