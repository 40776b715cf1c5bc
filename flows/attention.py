"""The recordings a person should look at after a run: failed, skipped, needing review.

Generic over statuses: every file outcome other than done, released (given back) or
lost (another worker owns it) is listed, so a status added later (needs_review) shows
up without a change here. Each is named by its path in the source, with its reason.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from tasks.discovery.discover import Discovery
from tasks.discovery.names import reason_about, recording_name
from tasks.transcription.progress import FileOutcome

LISTED_MAX = 20  # recordings named in a summary; `medasr status` shows the rest
_NOT_TO_CHECK = frozenset({"done", "released", "lost"})
_ORDER = ("failed", "needs_review", "skipped")  # most urgent first; others after
TO_CHECK_KEY = "recordings_to_check"
TOTAL_KEY = "recordings_to_check_total"


def recordings_to_check(
    outcomes: Iterable[FileOutcome], *, discovery: Discovery | None, roots: Sequence[str]
) -> tuple[list[dict[str, str]], int]:
    """Up to LISTED_MAX rows {recording, status, reason}, most urgent first, and the total.

    Each status gets its turn (round robin) before the cap: 30 failures never hide the
    one recording skipped as silent.
    """
    rows = [
        _row(o.source_uri, status=o.outcome, reason=o.reason or o.error_kind, roots=roots)
        for o in outcomes
        if needs_check(o)
    ]
    if discovery is not None:  # listed but unreadable: recorded as failed before any send
        rows += [
            _row(s.uri, status="failed", reason=s.reason, roots=roots)
            for s in discovery.skipped
            if s.unreadable
        ]
    return _fair_share(rows, limit=LISTED_MAX), len(rows)


def needs_check(outcome: FileOutcome) -> bool:
    """A person should look at this file (it did not end done, released or lost)."""
    return outcome.outcome not in _NOT_TO_CHECK


def to_check_lines(summary: dict[str, Any]) -> list[str]:
    """The printed list: one line per recording, then how to see the rest and re-queue."""
    rows: list[dict[str, str]] = summary.get(TO_CHECK_KEY) or []
    total = int(summary.get(TOTAL_KEY, len(rows)))
    if not rows:
        return []
    lines = [f"Recordings to check ({total}):"]
    lines += [f"  {row['status']}: {row['recording']}: {row['reason']}" for row in rows]
    if total > len(rows):
        lines.append(
            f"  ... and {total - len(rows)} more: `medasr status --failures {total}` lists them"
        )
    if any(row["status"] == "skipped" for row in rows):
        lines.append("  `medasr rerun-failures --include-skipped` re-queues skipped recordings")
    return lines


def _fair_share(rows: list[dict[str, str]], *, limit: int) -> list[dict[str, str]]:
    """At most `limit` rows taken a status at a time in turn, sorted by status and name."""
    groups: dict[str, list[dict[str, str]]] = {}
    for row in sorted(rows, key=lambda row: row["recording"]):
        groups.setdefault(row["status"], []).append(row)
    queues = [groups[status] for status in sorted(groups, key=_rank)]
    chosen: list[dict[str, str]] = []
    while len(chosen) < limit and any(queues):
        for queue in queues:
            if queue and len(chosen) < limit:
                chosen.append(queue.pop(0))
    return sorted(chosen, key=lambda row: (_rank(row["status"]), row["recording"]))


def _row(uri: str, *, status: str, reason: str | None, roots: Sequence[str]) -> dict[str, str]:
    return {
        "recording": recording_name(uri, roots=roots),
        "status": status,
        "reason": reason_about(reason, uri=uri, roots=roots) or "no reason recorded",
    }


def _rank(status: str) -> int:
    return _ORDER.index(status) if status in _ORDER else len(_ORDER)
