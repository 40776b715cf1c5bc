"""List a source and register what is there: the first step of every backlog run."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from storage.database import Store
from storage.sources import SkippedFile, list_audio

logger = logging.getLogger("medasr.discover")


@dataclass(frozen=True)
class Discovery:
    """What one scan found and what registering it changed."""

    source: str
    listed: int
    new: int
    changed: int
    unchanged: int
    skipped: tuple[SkippedFile, ...]
    unreadable: int = 0  # items newly recorded as failed: listed but unreadable


def discover_and_register(
    *,
    source: str,
    language: str,
    store: Store,
    settle_s: float,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    storage_options: Mapping[str, Any] | None = None,
) -> Discovery:
    """List audio under `source` and upsert one item per (file, language); raises SourceError.

    Files that are there but cannot be read are recorded as failed (source_unreadable);
    files still being written are left for the next run.
    """
    listing = list_audio(
        source,
        include=include,
        exclude=exclude,
        settle_s=settle_s,
        storage_options=storage_options,
    )
    unreadable = [s for s in listing.skipped if s.unreadable]
    with store.repository() as repo:
        registered = repo.register_items(listing.files, language=language)
        recorded = repo.record_unreadable(unreadable, language=language)
    for skipped in listing.skipped:
        if skipped.unreadable:
            logger.warning("cannot read %s (%s): recorded as failed", skipped.uri, skipped.reason)
        else:
            logger.warning("not listed: %s (%s)", skipped.uri, skipped.reason)
    return Discovery(
        source=source,
        listed=len(listing.files),
        new=registered.new,
        changed=registered.changed,
        unchanged=registered.unchanged,
        skipped=tuple(listing.skipped),
        unreadable=recorded,
    )
