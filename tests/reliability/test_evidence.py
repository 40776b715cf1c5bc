"""The crash soak's own judge (evidence.audit_resends) on hand-made ledgers: what a kill
explains, and what it does not."""

from __future__ import annotations

from devserver import LedgerEntry
from tests.reliability.evidence import Kill, audit_resends


def _answer(time_s: float, *, sha: str = "a" * 64, txn: str, status: int = 200) -> LedgerEntry:
    return LedgerEntry(
        time=time_s, status=status, language="en-IN", sha256=sha, bytes=10, body_bytes=10,
        encrypted=False, filename="chunk-0001.wav", retry_after_s=None, fault=None, txn_id=txn,
    )  # fmt: skip


KILL = Kill(time=10.0, ledger_len=1, settled_at=11.3)


def test_an_answer_the_killed_run_began_just_after_the_kill_is_explained() -> None:
    # Sent just before SIGKILL, handled by the devserver 40 ms after it; the next run
    # sends the audio again at 15 s and its answer is the one recorded.
    entries = [_answer(10.04, txn="cut"), _answer(15.0, txn="kept")]
    audit = audit_resends(entries, {"kept"}, [KILL])
    assert (audit.unexplained, audit.lost_in_kill, audit.resent_after_recorded) == ([], 1, [])


def test_an_answer_sent_again_by_the_same_run_is_not_explained_by_a_later_kill() -> None:
    entries = [_answer(5.0, txn="first"), _answer(6.0, txn="kept")]
    audit = audit_resends(entries, {"kept"}, [KILL])
    assert audit.unexplained == [f"{'a' * 12} at ledger position 0"]


def test_an_answer_after_the_kill_settled_belongs_to_the_next_run() -> None:
    entries = [_answer(12.0, txn="lost"), _answer(13.0, txn="kept")]
    audit = audit_resends(entries, {"kept"}, [KILL])
    assert audit.unexplained == [f"{'a' * 12} at ledger position 0"]


def test_nothing_may_be_sent_after_the_recorded_answer() -> None:
    entries = [_answer(5.0, txn="kept"), _answer(15.0, txn="again")]
    audit = audit_resends(entries, {"kept"}, [KILL])
    assert audit.resent_after_recorded == ["a" * 64]
