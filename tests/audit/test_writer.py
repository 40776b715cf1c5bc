"""record_event: one event per call, in the caller's transaction, chained, timed by the database."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest

from audit import AuditAction, command_actor, record_event
from audit.errors import AuditEventRefused
from storage.audit_chain import GENESIS, walk_chain
from storage.errors import StoreFailed
from storage.interface import UnitOfWorkFactory


def test_an_event_is_stored_with_who_what_which_and_where(audit_store: UnitOfWorkFactory) -> None:
    before = datetime.now(UTC) - timedelta(minutes=5)
    with audit_store.unit_of_work() as uow:
        record_event(
            uow,
            action=AuditAction.EXPORTED,
            actor="os:alice@ward",
            item_id=None,
            path="out/export.csv",
            target="csv",
            detail={"records": 3, "format": "csv"},
        )
        record_event(
            uow, action=AuditAction.ACCEPTED, actor="os:alice@ward", item_id=7, path="a.wav"
        )
    with audit_store.unit_of_work(read_only=True) as uow:
        events = list(uow.audit.chain())
    assert [(e.seq, e.action, e.item_id, e.path) for e in events] == [
        (1, "exported", None, "out/export.csv"),
        (2, "accepted", 7, "a.wav"),
    ]
    first, second = events
    assert first.target == "csv"
    assert first.detail == {"records": 3, "format": "csv"}
    assert first.prev_hash == GENESIS
    assert second.prev_hash == first.hash
    after = datetime.now(UTC) + timedelta(minutes=5)
    assert before < first.occurred_at <= second.occurred_at < after
    report = walk_chain(events)
    assert report.broken is None
    assert (report.events, report.newest_hash) == (2, second.hash)


def test_an_event_commits_and_rolls_back_with_the_change_it_describes(
    audit_store: UnitOfWorkFactory,
) -> None:
    def fail_after_the_event() -> None:
        with audit_store.unit_of_work() as uow:
            record_event(uow, action=AuditAction.RESENT, actor="os:bob@ward", item_id=1)
            raise RuntimeError("the change failed")

    with pytest.raises(RuntimeError):
        fail_after_the_event()
    with audit_store.unit_of_work() as uow:
        record_event(uow, action=AuditAction.RESENT, actor="os:bob@ward", item_id=2)
    with audit_store.unit_of_work(read_only=True) as uow:
        assert [(e.seq, e.item_id) for e in uow.audit.chain()] == [(1, 2)]


def test_appends_from_many_writers_at_once_make_one_whole_chain(
    audit_store: UnitOfWorkFactory,
) -> None:
    writers, per_writer = 4, 15
    failures: list[BaseException] = []

    def write(number: int) -> None:
        try:
            for index in range(per_writer):
                with audit_store.unit_of_work() as uow:
                    record_event(
                        uow, action=AuditAction.DELIVERED, actor=f"w{number}", item_id=index
                    )
        except BaseException as exc:  # surfaced below
            failures.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    with audit_store.unit_of_work(read_only=True) as uow:
        events = list(uow.audit.chain())
    assert [e.seq for e in events] == list(range(1, writers * per_writer + 1))
    assert walk_chain(events).broken is None


def test_a_read_only_unit_of_work_cannot_write_an_event(audit_store: UnitOfWorkFactory) -> None:
    with (
        pytest.raises(StoreFailed, match="write unit of work"),
        audit_store.unit_of_work(read_only=True) as uow,
    ):
        record_event(uow, action=AuditAction.LOGIN, actor="alice")


@pytest.mark.parametrize(
    ("detail", "message"),
    [
        ({"text": "patient says"}, "may not carry 'text'"),
        ({"Transcript": "x"}, "may not carry"),
        ({"records": True}, "number or a name"),
        ({"records": 1.5}, "number or a name"),
        ({"receiver": "x" * 300}, "longer than"),
    ],
)
def test_a_detail_that_could_carry_text_is_refused(
    audit_store: UnitOfWorkFactory, detail: dict[str, object], message: str
) -> None:
    with pytest.raises(AuditEventRefused, match=message), audit_store.unit_of_work() as uow:
        record_event(uow, action=AuditAction.EXPORTED, actor="a", detail=detail)  # type: ignore[arg-type]
    with audit_store.unit_of_work(read_only=True) as uow:
        assert uow.audit.newest_event() is None


def test_an_unknown_action_or_an_empty_actor_is_refused(audit_store: UnitOfWorkFactory) -> None:
    with pytest.raises(ValueError), audit_store.unit_of_work() as uow:
        record_event(uow, action="peeked", actor="a")  # type: ignore[arg-type]
    with pytest.raises(AuditEventRefused), audit_store.unit_of_work() as uow:
        record_event(uow, action=AuditAction.LOGIN, actor="")


def test_the_action_names_are_the_contract() -> None:
    assert {a.value for a in AuditAction} >= {
        "transcript_viewed", "audio_served", "revision_saved", "finalized", "accepted",
        "sent_back", "login", "login_failed", "locked_out", "logout", "exported", "delivered",
        "delivery_in_doubt", "resent", "purged", "reviewer_added", "settings_changed",
    }  # fmt: skip


def test_a_command_is_done_by_the_os_user_at_this_host() -> None:
    import os
    import pwd
    import socket

    expected = f"os:{pwd.getpwuid(os.getuid()).pw_name}@{socket.gethostname()}"
    assert command_actor() == expected


def test_filters_select_on_both_backends(audit_store: UnitOfWorkFactory) -> None:
    from storage.audit_records import AuditFilter

    with audit_store.unit_of_work() as uow:
        record_event(uow, action=AuditAction.LOGIN, actor="al_ce")
        record_event(uow, action=AuditAction.EXPORTED, actor="os:al_ce@host", item_id=3)
        record_event(uow, action=AuditAction.EXPORTED, actor="os:alxce@host", item_id=3)
    with audit_store.unit_of_work(read_only=True) as uow:
        by_user = [e.seq for e in uow.audit.events(AuditFilter(actor="al_ce"))]
        by_item = [e.seq for e in uow.audit.events(AuditFilter(item_id=3, action="exported"))]
        later = list(uow.audit.events(AuditFilter(since=datetime.now(UTC) + timedelta(days=1))))
        newest_login = uow.audit.newest_event(action="login")
    assert by_user == [1, 2]  # "_" is a letter here, not a wildcard
    assert by_item == [2, 3]
    assert later == []
    assert newest_login is not None
    assert newest_login.seq == 1
