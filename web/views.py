"""What the pages show, computed from plain records: rows, ages, segments, a diff."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from datetime import datetime, timedelta

from storage.records import ChunkRecord, ItemRecord
from tasks.discovery.recording_names import recording_name

PAGE_SIZE = 50
WAITING = "needs_review"  # the only status whose time since the last change is a wait
_ID_MAX_DIGITS = 18  # past a 64-bit integer the store cannot compare it


@dataclass(frozen=True)
class QueueRow:
    """One recording in the queue."""

    id: int
    name: str
    language: str
    duration: str
    flags: str
    age: str
    status: str


@dataclass(frozen=True)
class SegmentRow:
    """One segment (chunk) of a recording, its time and the machine's words for it."""

    index: int
    start_ms: int
    end_ms: int
    start: str
    end: str
    text: str


@dataclass(frozen=True)
class DiffPiece:
    """A run of words: kept (same), taken out (removed) or put in (added)."""

    kind: str
    text: str


def queue_rows(items: list[ItemRecord], *, roots: list[str], now: datetime) -> list[QueueRow]:
    """The queue's rows, names relative to the recorded sources."""
    return [
        QueueRow(
            id=item.id,
            name=recording_name(item.source_uri, roots=roots),
            language=item.language,
            duration=clock(item.duration_ms or 0),
            flags=", ".join(item.flags) or str(item.extras.get("review_reason") or "routine"),
            age=age(now - item.updated_at) if item.status == WAITING else "",
            status=item.status,
        )
        for item in items
    ]


def segment_rows(chunks: list[ChunkRecord]) -> list[SegmentRow]:
    """The segments in order, with clock times."""
    return [
        SegmentRow(
            index=chunk.index,
            start_ms=chunk.start_ms,
            end_ms=chunk.end_ms,
            start=clock(chunk.start_ms),
            end=clock(chunk.end_ms),
            text=chunk.text or "",
        )
        for chunk in sorted(chunks, key=lambda c: c.index)
    ]


def word_diff(before: str, after: str) -> list[DiffPiece]:
    """What changed between two texts, word by word."""
    old, new = before.split(), after.split()
    pieces: list[DiffPiece] = []
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            pieces.append(DiffPiece("same", " ".join(old[i1:i2])))
            continue
        if i2 > i1:
            pieces.append(DiffPiece("removed", " ".join(old[i1:i2])))
        if j2 > j1:
            pieces.append(DiffPiece("added", " ".join(new[j1:j2])))
    return pieces


def clock(ms: int) -> str:
    """m:ss (h:mm:ss past an hour)."""
    seconds = ms // 1000
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def age(elapsed: timedelta) -> str:
    """How long ago, in the largest whole unit (min, h, d)."""
    seconds = int(elapsed.total_seconds())
    if seconds < 3600:
        return f"{max(seconds // 60, 0)} min"
    if seconds < 86_400:
        return f"{seconds // 3600} h"
    return f"{seconds // 86_400} d"


def duration_words(seconds: float) -> str:
    """A span in words a person says: '20 seconds', '15 minutes', '1 hour 30 minutes'."""
    rest = max(round(seconds), 0)
    parts = []
    for size, unit in ((3600, "hour"), (60, "minute"), (1, "second")):
        count, rest = divmod(rest, size)
        if count:
            parts.append(f"{count} {unit}{'' if count == 1 else 's'}")
    return " ".join(parts) or "0 seconds"


def cursor_of(item: ItemRecord) -> str:
    """The queue's next-page cursor after `item`."""
    return f"{item.updated_at.isoformat()}~{item.id}"


def parse_cursor(value: str | None) -> tuple[datetime, int] | None:
    """(updated_at, id) from a cursor; None for a missing or malformed one."""
    if not value or "~" not in value:
        return None
    at, _, item_id = value.rpartition("~")
    if not item_id.isdecimal() or len(item_id) > _ID_MAX_DIGITS:
        return None
    try:
        moment = datetime.fromisoformat(at)
    except ValueError:
        return None
    if moment.tzinfo is None:  # the pages write aware times; a bare one is not theirs
        return None
    return moment, int(item_id)
