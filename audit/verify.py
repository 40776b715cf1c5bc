"""`medasr audit verify`: walk the whole chain and say whether it is whole.

What a whole chain proves: no event was edited, removed or put in out of order since
it was written, by anyone who did not also recompute every hash after it. What it does
not prove: someone with write access to the database can rebuild the entire chain from
any point on. An anchor (the newest hash, kept outside the database) closes that gap:
`--since-anchor HASH` checks the chain still holds that exact event.
"""

from __future__ import annotations

from dataclasses import dataclass

from audit.errors import AuditFilterInvalid
from storage.audit_chain import ChainReport, walk_chain
from storage.interface import UnitOfWorkFactory

_HEX = frozenset("0123456789abcdef")


@dataclass(frozen=True)
class Verdict:
    """The walk's report, and for an anchor whether the chain still holds it."""

    report: ChainReport
    anchor: str | None = None

    @property
    def whole(self) -> bool:
        """True when every link matches (and the anchor, if given, is in the chain)."""
        return self.report.broken is None and (self.anchor is None or self.report.anchor_seen)

    def sentence(self) -> str:
        """What the walk found, for a person (never an event's content)."""
        report = self.report
        if report.broken is not None:
            return (
                f"audit trail broken at event {report.broken.seq}: {report.broken.reason}; "
                f"{report.events} event(s) before it match{self._newest()}"
            )
        if self.anchor is not None and not report.anchor_seen:
            return (
                f"audit trail does not contain the anchor {self.anchor}: the chain was rebuilt "
                f"or cut at or before it ({report.events} event(s) now, each matching)"
            )
        anchored = f"; it contains the anchor {self.anchor}" if self.anchor else ""
        newest = report.newest_hash
        return (
            f"audit trail whole: {report.events} event(s), newest hash {newest}"
            f"{self._newest()}{anchored}"
        )

    def _newest(self) -> str:
        """When the newest matching event was written: a trail whose newest events were
        removed ends too early, and only a person who knows when the last one was made
        (or an anchor) can tell."""
        at = self.report.newest_at
        if at is None:
            return "; no event: without an anchor an empty trail proves nothing"
        return f"; the newest written {at.isoformat(timespec='seconds')}"


def checked_anchor(anchor: str) -> str:
    """The anchor in lower case; raises AuditFilterInvalid unless it is a SHA-256 in hex."""
    lowered = anchor.strip().lower()
    if len(lowered) != 64 or not set(lowered) <= _HEX:
        raise AuditFilterInvalid(
            "--since-anchor takes a hash printed by `medasr audit verify --anchor` (64 hex digits)"
        )
    return lowered


def verify_trail(store: UnitOfWorkFactory, *, since_anchor: str | None = None) -> Verdict:
    """Walk the chain in one read transaction; `since_anchor` must be one of its hashes."""
    with store.unit_of_work(read_only=True) as uow:
        report = walk_chain(uow.audit.chain(), anchor=since_anchor)
    return Verdict(report=report, anchor=since_anchor)


def anchor_line(store: UnitOfWorkFactory) -> str:
    """The line the nightly run logs: the anchor to keep outside the database (the newest
    hash, after a walk of the chain) with how many events and when the newest was
    written; or, when the chain is broken, where."""
    verdict = verify_trail(store)
    if not verdict.whole:
        return verdict.sentence()
    report = verdict.report
    newest = report.newest_at.isoformat(timespec="seconds") if report.newest_at else "none"
    return (
        f"audit anchor {report.newest_hash} ({report.events} event(s), the newest written "
        f"{newest}): keep it outside the database; `medasr audit verify --since-anchor` "
        "checks it later"
    )
