"""Transcript versions: what names one transcript of one recording's content (no SQL).

A version changes when the recording's content (sha256 of the audio), the language or
the text changes; the delivery ledger delivers each version once per target, and once
more each time it becomes the note again after another version replaced it
(`plan_version`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from storage.records import ItemRecord


def transcript_version(*, content_sha256: str | None, language: str, text: str) -> str:
    """sha256 (hex) naming one transcript of one recording's content in one language."""
    text_sha256 = hashlib.sha256(text.encode("utf-8")).hexdigest()
    named = f"{content_sha256 or ''}\n{language}\n{text_sha256}"
    return hashlib.sha256(named.encode("utf-8")).hexdigest()


def item_version(item: ItemRecord) -> str:
    """The transcript version of a finished item as it is stored now."""
    return transcript_version(
        content_sha256=item.sha256, language=item.language, text=item.text or ""
    )


# A row whose request went out and may be in the record while it is unsettled.
_MAY_BE_FILED = ("pending", "processing", "in_doubt")


class Filed(Protocol):
    """What the plan reads of a delivery row (a DeliveryRecord or a selected row)."""

    @property
    def id(self) -> int: ...
    @property
    def version(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def control_id(self) -> str | None: ...
    @property
    def filing(self) -> int: ...


@dataclass(frozen=True)
class VersionPlan:
    """What one target's ledger needs for the current version of one note.

    `action`: "keep" (the target holds it, or its row is on its way, in doubt or failed
    for good), "revive" (its row set aside before it went out comes back: `row_id`),
    "new" (a first row, `filing` 0) or "refile" (the target holds another version that
    replaced it: a new row, `filing` one more). `replaces_id`: the row of the version
    the target holds, if any.
    """

    action: str
    replaces_id: int | None = None
    row_id: int | None = None
    filing: int = 0


def plan_version(rows: Sequence[Filed], *, version: str) -> VersionPlan:
    """The plan for `version` given one target's rows of the note, oldest first.

    The target holds the version of its newest row that is delivered or went out and may
    be in the record; when that is another version, the current one goes as its
    replacement, even if it was delivered once before (its words equal an earlier
    version's)."""
    same = [r for r in rows if r.version == version]
    holding = [r for r in rows if _may_hold(r)]
    delivered = [r.id for r in rows if r.status == "delivered"]
    replaces_id = delivered[-1] if delivered else None
    if holding and holding[-1].version == version:
        return VersionPlan("keep")
    if not same:
        return VersionPlan("new", replaces_id=replaces_id)
    last = same[-1]
    if last.status == "superseded":
        return VersionPlan("revive", replaces_id=replaces_id, row_id=last.id)
    if last.status == "delivered":
        return VersionPlan("refile", replaces_id=replaces_id, filing=last.filing + 1)
    return VersionPlan("keep")


def _may_hold(row: Filed) -> bool:
    return row.status == "delivered" or (row.status in _MAY_BE_FILED and row.control_id is not None)
