"""Listed sources (`uow.listings`): the sources this store has listed, and the files each
latest listing ignored as not audio, named relative to the source for `medasr status`.

A source is noted before its listing registers anything, so its recordings are named
relative to it even when no run row exists. The names can carry patients' names: each
listing replaces its source's names (a file gone from the source is gone here), only the
first `IgnoredFiles.EXAMPLES` are kept, and a purge removes them all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlalchemy import bindparam, delete, func, insert, select, text, update
from sqlalchemy.orm import Session

from storage import clock
from storage.models import ListedSource, NotAudioFile, UTCDateTime
from storage.records import NotAudioListing

_NOTE_SOURCE = text(
    "INSERT INTO listed_sources (uri, listed_at, not_audio_count) VALUES (:uri, :now, 0)"
    " ON CONFLICT (uri) DO NOTHING"
).bindparams(bindparam("now", type_=UTCDateTime()))


class Listings:
    """Note listed sources, keep and read what they ignored as not audio."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def note_source(self, uri: str) -> int:
        """The id of the listed source `uri`, recorded now if it is new."""
        found = self._session.scalar(select(ListedSource.id).where(ListedSource.uri == uri))
        if found is not None:
            return found
        # Workers listing the same source at once: the second insert is a no-op, not an error.
        self._session.execute(_NOTE_SOURCE, {"uri": uri, "now": clock.host_now()})
        noted = self._session.scalar(select(ListedSource.id).where(ListedSource.uri == uri))
        assert noted is not None, "a source noted in this transaction"
        return noted

    def record_not_audio(
        self, uri: str, *, count: int, by_reason: Mapping[str, int], names: Sequence[str]
    ) -> None:
        """Replace what the source's latest listing ignored: its count by reason and the
        first `names` (relative to the source)."""
        source_id = self.note_source(uri)
        self._session.execute(
            update(ListedSource)
            .where(ListedSource.id == source_id)
            .values(
                listed_at=clock.host_now(),
                not_audio_count=count,
                not_audio_by_reason=dict(by_reason) or None,
            )
            .execution_options(synchronize_session=False)
        )
        self._session.execute(delete(NotAudioFile).where(NotAudioFile.source_id == source_id))
        if names:
            rows = [{"source_id": source_id, "name": name} for name in names]
            self._session.execute(insert(NotAudioFile), rows)

    def not_audio(self) -> list[NotAudioListing]:
        """Each source whose latest listing ignored files as not audio, by URI."""
        sources = self._session.execute(
            select(ListedSource).where(ListedSource.not_audio_count > 0).order_by(ListedSource.uri)
        ).scalars()
        listings = []
        for source in sources:
            names = self._session.scalars(
                select(NotAudioFile.name)
                .where(NotAudioFile.source_id == source.id)
                .order_by(NotAudioFile.id)
            )
            listings.append(
                NotAudioListing(
                    source=source.uri,
                    listed_at=source.listed_at,
                    count=source.not_audio_count,
                    by_reason=dict(source.not_audio_by_reason or {}),
                    names=list(names),
                )
            )
        return listings

    def forget_not_audio(self) -> int:
        """Remove every not-audio name and count (a purge); returns the names removed."""
        removed = self._session.scalar(select(func.count()).select_from(NotAudioFile)) or 0
        self._session.execute(delete(NotAudioFile))
        self._session.execute(
            update(ListedSource)
            .values(not_audio_count=0, not_audio_by_reason=None)
            .execution_options(synchronize_session=False)
        )
        return removed

    def sources(self) -> list[str]:
        """Every source listed, sorted."""
        return list(self._session.scalars(select(ListedSource.uri).order_by(ListedSource.uri)))
