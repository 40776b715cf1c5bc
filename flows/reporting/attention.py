"""The recordings a person should look at after a run: failed, skipped, needing review.

Generic over statuses: every file outcome other than done, purged (touched, unchanged),
released (given back) or lost (another worker owns it) is listed, so a status added
later (needs_review) shows up without a change here. Each is named by its path in the
source, with its reason.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from storage.records import ItemStatus
from tasks.discovery.discover import Discovery
from tasks.discovery.names import reason_about, recording_name
from tasks.transcription.progress import FileOutcome

LISTED_MAX = 20  # recordings named in a summary; `medasr status` shows the rest
_NOT_TO_CHECK = frozenset({ItemStatus.DONE, ItemStatus.PURGED, "released", "lost"})
# Most urgent first; others after.
UNREADABLE = "source_unreadable"  # the error kind of a listed file that cannot be read
_ORDER = (ItemStatus.FAILED, ItemStatus.NEEDS_REVIEW, ItemStatus.SKIPPED)


@dataclass(frozen=True)
class CheckRow:
    """One recording a person should look at: its path in the source, never its text."""

    recording: str
    status: str
    reason: str
    kind: str | None = None  # the error kind (corrupt_audio, silent_audio, ...)
    retryable: bool = False


def recordings_to_check(
    outcomes: Iterable[FileOutcome], *, discovery: Discovery | None, roots: Sequence[str]
) -> tuple[list[CheckRow], int]:
    """Up to LISTED_MAX rows, most urgent first, and the total.

    Each status gets its turn (round robin) before the cap: 30 failures never hide the
    one recording skipped as silent.
    """
    rows = [
        _row(
            o.source_uri,
            status=o.outcome,
            reason=o.reason or o.error_kind,
            roots=roots,
            kind=o.error_kind,
            retryable=o.retryable,
        )
        for o in outcomes
        if needs_check(o)
    ]
    if discovery is not None:  # listed but unreadable: recorded as failed before any send
        rows += [
            _row(s.uri, status=ItemStatus.FAILED, reason=s.reason, roots=roots, kind=UNREADABLE)
            for s in discovery.skipped
            if s.unreadable
        ]
    return _fair_share(rows, limit=LISTED_MAX), len(rows)


def needs_check(outcome: FileOutcome) -> bool:
    """A person should look at this file (it did not end done, released or lost)."""
    return outcome.outcome not in _NOT_TO_CHECK


def to_check_lines(
    rows: Sequence[CheckRow], *, total: int, skipped_rejudged: bool = False
) -> list[str]:
    """The printed list: one line per recording (`total` in all), then how to see the rest
    and re-queue (`skipped_rejudged`: this run already judged the skipped ones afresh)."""
    if not rows:
        return []
    lines = [f"Recordings to check ({total}):"]
    lines += [f"  {row.status}: {row.recording}: {row.reason}" for row in rows]
    if total > len(rows):
        lines.append(
            f"  ... and {total - len(rows)} more: `medasr status --failures {total}` lists them"
        )
    if any(row.status == ItemStatus.SKIPPED for row in rows):
        if skipped_rejudged:
            lines.append(
                "  skipped recordings were judged afresh and are silent again: listen to them"
            )
        else:
            lines.append("  `medasr rerun-failures --include-skipped` re-queues skipped recordings")
    return lines


def _fair_share(rows: list[CheckRow], *, limit: int) -> list[CheckRow]:
    """At most `limit` rows taken a status at a time in turn, sorted by status and name."""
    groups: dict[str, list[CheckRow]] = {}
    for row in sorted(rows, key=lambda row: row.recording):
        groups.setdefault(row.status, []).append(row)
    queues = [groups[status] for status in sorted(groups, key=_rank)]
    chosen: list[CheckRow] = []
    while len(chosen) < limit and any(queues):
        for queue in queues:
            if queue and len(chosen) < limit:
                chosen.append(queue.pop(0))
    return sorted(chosen, key=lambda row: (_rank(row.status), row.recording))


def _row(
    uri: str,
    *,
    status: str,
    reason: str | None,
    roots: Sequence[str],
    kind: str | None = None,
    retryable: bool = False,
) -> CheckRow:
    return CheckRow(
        recording=recording_name(uri, roots=roots),
        status=str(status),
        reason=reason_about(reason, uri=uri, roots=roots) or "no reason recorded",
        kind=kind,
        retryable=retryable,
    )


def _rank(status: str) -> int:
    return _ORDER.index(status) if status in _ORDER else len(_ORDER)
