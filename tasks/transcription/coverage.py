"""Audio already answered by the service: reuse it by range, whatever the new split.

The chunks table keeps every paid answer with its start and end (ms). A new split of
the same content (another MEDASR_MAX_UPLOAD_BYTES, encryption on, another
MIN_PAUSE_MS) is forced to cut at every answered range's edges (`cut_points`), so each
new chunk lies wholly inside an answered range (not sent: the range's text is used
once) or wholly outside all of them (sent, under the new cap). Matching on identical
boundaries, as before, re-sent every chunk of a partly done file when the cap changed.

Only answers with status "done" are reused: a "silent" row was free and is judged again
(the silence rule may have changed since). Row indices of new chunks never overwrite an
answered row (`row_index`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from storage.records import ChunkRecord, ChunkStatus
from tasks.audio import Chunk

_SAMPLES_PER_MS = 16  # the 16 kHz output signal


@dataclass(frozen=True)
class AnsweredRange:
    """A paid answer: its audio range (ms, end exclusive), row index and text."""

    start_ms: int
    end_ms: int
    index: int
    text: str


class Coverage:
    """The answered ranges of one item, and the row indices of the chunks sent now."""

    def __init__(self, done: Mapping[int, ChunkRecord]) -> None:
        self.ranges = answered_ranges(done)
        self._answered_indices = {r.index for r in self.ranges}
        self._used = {r.index for r in self.ranges}
        self._base: int | None = None  # set once a natural index collides: offset mode
        self._started: set[int] = set()  # start_ms of ranges whose text was taken

    def cut_points(self) -> list[int]:
        """Sample positions the splitter must cut at: every answered range's edges."""
        edges = {ms * _SAMPLES_PER_MS for r in self.ranges for ms in (r.start_ms, r.end_ms)}
        return sorted(edges)

    def covering(self, chunk: Chunk) -> AnsweredRange | None:
        """The answered range holding all of `chunk`, if any."""
        for answered in self.ranges:
            if answered.start_ms <= chunk.start_ms and chunk.end_ms <= answered.end_ms:
                return answered
        return None

    def reused_text(self, chunk: Chunk) -> str | None:
        """The text to keep for a covered `chunk` ("" after the range's first chunk); None
        when the chunk is not covered and must be sent."""
        answered = self.covering(chunk)
        if answered is None:
            return None
        if answered.start_ms in self._started:
            return ""
        self._started.add(answered.start_ms)
        return answered.text

    def row_index(self, chunk: Chunk) -> int:
        """The chunks-table index for a chunk sent now: its own, unless an answered row
        holds that index; from then on indices above every row (still increasing)."""
        if self._base is None and chunk.index not in self._answered_indices:
            index = chunk.index
        else:
            if self._base is None:
                self._base = max(self._used)
            index = self._base + chunk.index
        self._used.add(index)
        return index


def answered_ranges(done: Mapping[int, ChunkRecord]) -> list[AnsweredRange]:
    """Paid answers in order of position; of two that overlap (rows of an older split
    left behind), the earlier-starting one is kept."""
    kept: list[AnsweredRange] = []
    rows = sorted(
        (r for r in done.values() if r.status == ChunkStatus.DONE and r.end_ms > r.start_ms),
        key=lambda r: (r.start_ms, r.index),
    )
    for row in rows:
        if kept and row.start_ms < kept[-1].end_ms:
            continue
        kept.append(AnsweredRange(row.start_ms, row.end_ms, row.index, row.text or ""))
    return kept
