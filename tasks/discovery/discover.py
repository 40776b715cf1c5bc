"""List a source and register what is there: the first step of every backlog run."""

from __future__ import annotations

import itertools
import logging
import os
import stat
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from storage.database import Store
from storage.errors import SourceNotFound, SourceUnreadable
from storage.local_files import printable
from storage.manifest import default_manifest, metadata_by_uri, read_manifest
from storage.records import RegisterResult, SourceFile
from storage.sources import SkippedFile, iter_audio, normalize_source
from tasks.discovery.names import one_line, recording_name

logger = logging.getLogger("medasr.discover")

# Listed files registered per transaction: bounded memory and write-lock holds.
REGISTER_BATCH_FILES = 1000


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
    manifest: str | None = None,
    batch_files: int = REGISTER_BATCH_FILES,
) -> Discovery:
    """List audio under `source` and upsert one item per (file, language); raises SourceError.

    The listing streams: every `batch_files` listed files are registered in a
    transaction of their own, so memory and the write lock's hold stay bounded however
    large the archive. Files that are there but cannot be read are recorded as failed
    (source_unreadable); files still being written are left for the next run. The
    metadata manifest (`manifest`, else medasr.csv at a local source's root) is stored
    on the items it names; a bad one raises ManifestInvalid before anything is listed.
    """
    metadata = manifest_metadata(source, manifest=manifest)
    stream = iter_audio(
        source,
        include=include,
        exclude=exclude,
        settle_s=settle_s,
        storage_options=storage_options,
    )
    listed, registered = _register_stream(stream.files, store, language, batch_files=batch_files)
    skipped = sorted(stream.skipped, key=lambda s: s.uri)
    unreadable = [s for s in skipped if s.unreadable]
    recorded = 0
    if unreadable or metadata:
        with store.repository() as repo:
            recorded = repo.record_unreadable(unreadable, language=language)
            if metadata:
                repo.set_item_metadata(metadata, language=language)
    _log_skipped(skipped, root=normalize_source(source))
    return Discovery(
        source=source,
        listed=listed,
        new=registered.new,
        changed=registered.changed,
        unchanged=registered.unchanged,
        skipped=tuple(skipped),
        unreadable=recorded,
    )


def _register_stream(
    files: Iterator[SourceFile], store: Store, language: str, *, batch_files: int
) -> tuple[int, RegisterResult]:
    """Register streamed files `batch_files` per transaction; returns (listed, totals)."""
    listed = new = changed = unchanged = 0
    while batch := list(itertools.islice(files, batch_files)):
        with store.repository() as repo:
            done = repo.register_items(batch, language=language)
        listed += len(batch)
        new, changed, unchanged = new + done.new, changed + done.changed, unchanged + done.unchanged
    return listed, RegisterResult(new=new, changed=changed, unchanged=unchanged)


def _log_skipped(skipped: Sequence[SkippedFile], *, root: str) -> None:
    for file in skipped:
        name, reason = recording_name(file.uri, roots=(root,)), one_line(file.reason)
        if file.unreadable:
            logger.warning("cannot read %s (%s): recorded as failed", name, reason)
        else:
            logger.warning("not listed: %s (%s)", name, reason)


def manifest_metadata(source: str, *, manifest: str | None) -> dict[str, dict[str, str]]:
    """The manifest's columns by source URI ({} without one); raises ManifestInvalid."""
    root = normalize_source(source)
    path = Path(manifest) if manifest is not None else default_manifest(root)
    if path is None:
        return {}
    return metadata_by_uri(read_manifest(path), source_root=root)


def check_manifest(source: str, *, manifest: Path | None) -> None:
    """Read the manifest a run would use, so a bad one stops it first; ManifestInvalid."""
    manifest_metadata(source, manifest=str(manifest) if manifest is not None else None)


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
