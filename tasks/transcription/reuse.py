"""What a file's content already earned: the ONE reuse decision of the run and the dry run.

Given what the store holds for the item and its fingerprint, `decide_reuse` says: the
same content was transcribed already (this item's own transcript, or a done twin with
the same sha256 and language) -> reuse that transcript, send nothing; the content
changed since the item's chunks were answered -> those chunks are void (reset); the same
content was partly answered -> those answers are reused by range and only the uncovered
audio is sent (tasks/transcription/coverage.py). `tasks/transcription/file_run.py` (the
run) and `tasks/transcription/backlog_plan.py` (`--dry-run`) both read the facts with
`read_reuse_facts` and decide with `decide_reuse`, so the plan cannot drift from the
run. Copies of content being sent right now wait for that answer (`ContentInFlight`),
and the plan counts them as reused the same way. A purged item whose file was touched
(new mtime or ETag) but holds the same bytes stays purged: nothing is sent, nothing is
filed. A done or held item whose file was touched keeps its transcript, review and
finish time while it waits to be hashed (extras["touched"]): the same bytes settle it
as it was (`stays_as_was`), a reviewer's correction included; other bytes forget it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from storage.interface import UnitOfWork
from storage.records import ChunkRecord, ItemRecord


@dataclass(frozen=True)
class ReuseFacts:
    """What the store holds that the decision weighs, read in one transaction."""

    twin: ItemRecord | None = None  # the latest done item with this content, if looked up
    chunks: Mapping[int, ChunkRecord] = field(default_factory=dict)  # the item's finished ones


@dataclass(frozen=True)
class ReuseDecision:
    """Reuse a transcript, or send the audio no earlier answer covers."""

    transcript: ItemRecord | None  # finish from this one's text; nothing is sent
    reset_chunks: bool  # the content changed: the item's old chunks must not be reused
    answered: Mapping[int, ChunkRecord]  # this content's finished chunks, reused by range
    stays_purged: bool = False  # purged, and the content is unchanged: nothing is sent
    stays_as_was: bool = False  # touched, the content unchanged: its result stands as it was

    @property
    def settled(self) -> bool:
        """Nothing is decoded or sent: a transcript is reused, or the item stays as it was
        (purged, or finished)."""
        return self.transcript is not None or self.stays_purged or self.stays_as_was

    @property
    def reuses_transcript(self) -> bool:
        """The whole file is answered already: nothing is decoded or sent."""
        return self.transcript is not None


class ContentInFlight:
    """Content this run is sending now, by (sha256, language): a copy waits for that answer.

    Ten thousand names for one recording (hard links, re-exports) claimed at once would
    otherwise each be sent: the store holds no done twin until the first one finishes.
    Used from the event loop only; entries live while their file is in flight.
    """

    def __init__(self) -> None:
        self._answers: dict[tuple[str, str], asyncio.Event] = {}

    def claim(self, *, sha256: str, language: str) -> asyncio.Event | None:
        """None: nobody sends this content now, the caller does; else the event that is
        set when the file sending it is settled (then decide again)."""
        key = (sha256, language)
        sending = self._answers.get(key)
        if sending is None:
            self._answers[key] = asyncio.Event()
        return sending

    def settle(self, *, sha256: str, language: str) -> None:
        """The file sending this content is settled: wake its copies."""
        answered = self._answers.pop((sha256, language), None)
        if answered is not None:
            answered.set()

    def __len__(self) -> int:
        return len(self._answers)


def decide_reuse(item: ItemRecord | None, *, sha256: str, facts: ReuseFacts) -> ReuseDecision:
    """The decision for content `sha256` of `item` (None: not registered yet). Pure."""
    if _purged_unchanged(item, sha256=sha256):
        return ReuseDecision(transcript=None, reset_chunks=False, answered={}, stays_purged=True)
    if touched_unchanged(item, sha256=sha256):
        return ReuseDecision(transcript=None, reset_chunks=False, answered={}, stays_as_was=True)
    changed = item is not None and item.sha256 is not None and item.sha256 != sha256
    if _own_transcript(item, sha256=sha256):
        transcript: ItemRecord | None = item
    elif facts.twin is not None and facts.twin.text is not None:
        transcript = facts.twin
    else:
        transcript = None
    same_content = item is not None and item.sha256 == sha256
    answered = facts.chunks if same_content and transcript is None else {}
    return ReuseDecision(transcript=transcript, reset_chunks=changed, answered=answered)


def read_reuse_facts(
    uow: UnitOfWork, item: ItemRecord | None, *, sha256: str, language: str
) -> ReuseFacts:
    """Read what `decide_reuse` needs, and nothing it would ignore (no twin query when the
    item holds its own transcript; no chunk query for new or changed content)."""
    if _purged_unchanged(item, sha256=sha256) or touched_unchanged(item, sha256=sha256):
        return ReuseFacts()
    own = _own_transcript(item, sha256=sha256)
    twin = None if own else uow.item_queries.find_done_with_sha(sha256=sha256, language=language)
    reusable = own or (twin is not None and twin.text is not None)
    if reusable or item is None or item.sha256 != sha256:
        return ReuseFacts(twin=twin)
    return ReuseFacts(twin=twin, chunks=uow.chunks.done_chunks(item.id))


def reused_extras(item: ItemRecord, transcript: ItemRecord) -> dict[str, Any]:
    """The extras recorded with a reused transcript: where it came from, if not the item."""
    return {"reused_from": transcript.source_uri} if transcript.id != item.id else {}


def _own_transcript(item: ItemRecord | None, *, sha256: str) -> bool:
    return item is not None and item.sha256 == sha256 and item.text is not None


def touched_unchanged(item: ItemRecord | None, *, sha256: str) -> bool:
    """A finished item listed again (touched) whose bytes are the same."""
    return (
        item is not None
        and item.sha256 == sha256
        and item.text is not None
        and "touched" in (item.extras or {})
    )


def _purged_unchanged(item: ItemRecord | None, *, sha256: str) -> bool:
    """A purged item (its receipt kept in extras) listed again with the same bytes."""
    return (
        item is not None
        and item.sha256 == sha256
        and item.text is None
        and "purged" in (item.extras or {})
    )
