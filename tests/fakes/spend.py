"""SpendRepository over the fake store's items and chunks (what was sent, per recording)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from storage.records import PendingAudio, SentRecording
from tests.fakes.item_rows import under


class FakeSpend:
    """What recordings cost, read from the working copy of the state."""

    def __init__(self, state: Any) -> None:
        self._s = state

    def sent_recordings(
        self,
        *,
        billed_min_ms: int,
        since: datetime | None = None,
        until: datetime | None = None,
        language: str | None = None,
    ) -> Iterator[SentRecording]:
        for item_id, item in sorted(self._s.items.items()):
            chunks = [c for (owner, _), c in self._s.chunks.items() if owner == item_id]
            sent = [c for c in chunks if c.status != "silent"]
            finished = item.done_at or item.updated_at
            if not sent or (language is not None and item.language != language):
                continue
            if (since is not None and finished < since) or (
                until is not None and finished >= until
            ):
                continue
            yield SentRecording(
                language=item.language,
                status=item.status,
                finished_at=finished,
                metadata=dict(item.metadata),
                duration_ms=item.duration_ms or 0,
                requests=sum(c.attempts for c in sent),
                billed_ms=sum(max(c.end_ms - c.start_ms, billed_min_ms) * c.attempts for c in sent),
            )

    def pending_audio(self, *, language: str | None, source_prefix: str | None) -> PendingAudio:
        pending = [
            item
            for item in self._s.items.values()
            if item.status == "pending"
            and (language is None or item.language == language)
            and (source_prefix is None or under(item.source_uri, source_prefix))
        ]
        return PendingAudio(
            recordings=len(pending),
            measured_ms=sum(i.duration_ms for i in pending if i.duration_ms is not None),
            unmeasured_bytes=sum(i.size_bytes for i in pending if i.duration_ms is None),
        )
