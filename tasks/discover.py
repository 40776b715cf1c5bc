"""List a source and register what is there: the first step of every backlog run."""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from storage.database import Store
from storage.errors import SourceNotFound, SourceUnreadable
from storage.local_files import printable
from storage.sources import SkippedFile, list_audio, normalize_source
from tasks.names import one_line, recording_name

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
    root = normalize_source(source)
    for skipped in listing.skipped:
        name, reason = recording_name(skipped.uri, roots=(root,)), one_line(skipped.reason)
        if skipped.unreadable:
            logger.warning("cannot read %s (%s): recorded as failed", name, reason)
        else:
            logger.warning("not listed: %s (%s)", name, reason)
    return Discovery(
        source=source,
        listed=len(listing.files),
        new=registered.new,
        changed=registered.changed,
        unchanged=registered.unchanged,
        skipped=tuple(listing.skipped),
        unreadable=recorded,
    )


def check_source(source: str) -> None:
    """Refuse a local source root that is missing or cannot be listed, in a millisecond.

    Raises SourceNotFound or SourceUnreadable (and UnsupportedSource for an unknown
    scheme). Buckets are not contacted here: their listing reports its own errors.
    """
    root = normalize_source(source)
    if "://" in root:
        return
    shown = printable(root)
    try:
        mode = os.stat(root).st_mode
    except FileNotFoundError:
        raise SourceNotFound(f"source not found: {shown}") from None
    except OSError as exc:
        raise SourceUnreadable(f"cannot open source {shown}: {exc.strerror}") from None
    if stat.S_ISDIR(mode):
        if not os.access(root, os.R_OK | os.X_OK):
            raise SourceUnreadable(f"cannot list source folder {shown}: permission denied")
    elif not stat.S_ISREG(mode):
        raise SourceUnreadable(f"source is neither a folder nor a file: {shown}")
    elif not os.access(root, os.R_OK):
        raise SourceUnreadable(f"cannot read source file {shown}: permission denied")
