"""List a source and register what is there: the first step of every backlog run.

`discover_and_register` upserts one item per (file, language). The listing streams:
every `batch_files` listed files are registered in a transaction of their own, so
memory and the write lock's hold stay bounded however large the archive. Files that are
there but cannot be read, and folders or bucket prefixes that cannot be listed, are
recorded as failed (source_unreadable); a folder's row goes once it is listed again.
Files still being written are left for the next run. The metadata manifest (`manifest`,
else medasr.csv at a local source's root) is stored on the items it names; a bad one
raises ManifestInvalid before anything is listed. A run that read it already passes its
`metadata` (and its parsed `source`): nothing is read twice. A manifest's `language`
cell sets a file's language (tasks/discovery/languages.py); `language` is the default
for the others.
"""

from __future__ import annotations

import itertools
import logging
import os
import stat
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from storage.errors import SourceNotFound, SourceUnreadable
from storage.interface import UnitOfWorkFactory
from storage.local_files import printable
from storage.manifest import default_manifest, metadata_by_uri, read_manifest
from storage.query_plans import refresh_statistics
from storage.records import IgnoredFiles, RegisterResult, SourceFile
from storage.sources import ListingStream, SkippedFile, SourceLocation, iter_audio, parse_source
from tasks.discovery.languages import FileLanguages
from tasks.discovery.recording_names import one_line, recording_name

logger = logging.getLogger("medasr.discover")

# Listed files registered per transaction: bounded memory and short write-lock holds.
# 5,000 rather than 1,000: a fifth of the commits, which the scale bench shows in the
# wall time of a large first listing.
REGISTER_BATCH_FILES = 5000


@dataclass(frozen=True)
class Discovery:
    """What one scan found and what registering it changed."""

    source: str
    listed: int
    new: int
    changed: int
    unchanged: int
    skipped: tuple[SkippedFile, ...]
    # Files and folders there but unreadable, each a failed row (source_unreadable) after
    # this run: the summary, the log and the artifact all read this one count.
    unreadable: int = 0
    # Files that are not recordings by the stated rule (storage/not_audio.py): counted and
    # named in the log, never registered.
    ignored: IgnoredFiles = field(default_factory=IgnoredFiles)

    @property
    def not_listed(self) -> int:
        """Files left for the next run (still being written, removed while listing)."""
        return sum(not s.unreadable for s in self.skipped)


Metadata = Mapping[str, Mapping[str, str]]  # a manifest's columns by source URI


def discover_and_register(
    *,
    source: SourceLocation | str,
    language: str | None,
    store: UnitOfWorkFactory,
    settle_s: float,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    storage_options: Mapping[str, Any] | None = None,
    manifest: str | None = None,
    metadata: Metadata | None = None,
    batch_files: int = REGISTER_BATCH_FILES,
) -> Discovery:
    """List audio under `source` and upsert one item per (file, language); raises
    SourceError (ManifestInvalid before anything is listed). The rules: this module's
    docstring."""
    location = as_location(source)
    if metadata is None:
        metadata = manifest_metadata(location, manifest=manifest)
    stream = iter_audio(
        location,
        include=include,
        exclude=exclude,
        settle_s=settle_s,
        storage_options=storage_options,
    )
    languages = FileLanguages(metadata, default=language)
    found_in_manifest: set[str] = set()
    files = _noting_manifest_rows(stream.files, metadata, found=found_in_manifest)
    listed, registered = _register_stream(
        files, store, languages, source_uri=location.uri, batch_files=batch_files
    )
    found_in_manifest.update(s.uri for s in stream.skipped)  # said apart, with their reason
    _log_manifest_rows_not_found(metadata, found=found_in_manifest, root=location.uri)
    return _settled(
        store, stream, languages=languages, root=location.uri, listed=listed, registered=registered
    )


def _noting_manifest_rows(
    files: Iterator[SourceFile], metadata: Metadata, *, found: set[str]
) -> Iterator[SourceFile]:
    """`files` as they are, each the manifest names added to `found` (memory: the
    manifest's size, not the archive's)."""
    for file in files:
        if file.uri in metadata:
            found.add(file.uri)
        yield file


def _log_manifest_rows_not_found(metadata: Metadata, *, found: set[str], root: str) -> None:
    """One warning naming the manifest's rows no listed file matched (the first 10)."""
    missing = sorted(uri for uri in metadata if uri not in found)
    if not missing:
        return
    names = ", ".join(recording_name(uri, roots=(root,)) for uri in missing[:10])
    more = f" ... and {len(missing) - 10} more" if len(missing) > 10 else ""
    logger.warning(
        "the manifest names %d file(s) this listing did not find (not there, not audio, or "
        "left out by --include/--exclude): %s%s; their columns reach no recording",
        len(missing),
        names,
        more,
    )


def _settled(
    store: UnitOfWorkFactory,
    stream: ListingStream,
    *,
    languages: FileLanguages,
    root: str,
    listed: int,
    registered: RegisterResult,
) -> Discovery:
    """Record and log what the listing did not register; fresh statistics for the planner
    after new items; what was found."""
    skipped = sorted(stream.skipped, key=lambda s: s.uri)
    unreadable = _record_unlisted(store, stream, skipped, languages=languages, root=root)
    if registered.new:  # the planner must see the archive's new shape before the run
        refresh_statistics(store)
    _log_skipped(skipped, root=root)
    log_ignored(stream.ignored, root=root)
    return Discovery(
        source=root,
        listed=listed,
        new=registered.new,
        changed=registered.changed,
        unchanged=registered.unchanged,
        skipped=tuple(skipped),
        unreadable=unreadable,
        ignored=stream.ignored,
    )


def _record_unlisted(
    store: UnitOfWorkFactory,
    stream: ListingStream,
    skipped: Sequence[SkippedFile],
    *,
    languages: FileLanguages,
    root: str,
) -> int:
    """Record what the listing could not register (unreadable files and folders, files
    that are not audio) and the manifest's columns; returns how many are unreadable."""
    language = languages.default
    unreadable = [s for s in skipped if s.unreadable]
    with store.unit_of_work() as uow:
        uow.items.record_unreadable(unreadable, language=language)
        uow.items.resolve_listed_folders(
            root=root,
            unlisted=[s.uri for s in unreadable if s.folder],
            language=language,
        )
        for file_language, columns_by_uri in languages.metadata_by_language():
            uow.items.set_item_metadata(columns_by_uri, language=file_language)
        uow.listings.record_not_audio(
            root,
            count=stream.ignored.count,
            by_reason=stream.ignored.by_reason,
            names=[relative_name(uri, root=root) for uri in stream.ignored.examples],
        )
    return len(unreadable)


def _register_stream(
    files: Iterator[SourceFile],
    store: UnitOfWorkFactory,
    languages: FileLanguages,
    *,
    source_uri: str,
    batch_files: int,
) -> tuple[int, RegisterResult]:
    """Register streamed files `batch_files` per transaction; returns (listed, totals).
    The source is noted with its first files: a recording is named relative to it even
    when the run is interrupted before its run row exists."""
    listed = new = changed = unchanged = 0
    while batch := list(itertools.islice(files, batch_files)):
        with store.unit_of_work() as uow:
            if not listed:
                uow.listings.note_source(source_uri)
            done = RegisterResult(new=0, changed=0, unchanged=0)
            for language, files_in_language in languages.grouped(batch):
                more = uow.items.register_items(files_in_language, language=language)
                done = RegisterResult(
                    new=done.new + more.new,
                    changed=done.changed + more.changed,
                    unchanged=done.unchanged + more.unchanged,
                )
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


def log_ignored(ignored: IgnoredFiles, *, root: str) -> None:
    """One line for the files that are not audio: how many, why, the first few by name."""
    if not ignored.count:
        return
    reasons = ", ".join(f"{reason}: {n}" for reason, n in sorted(ignored.by_reason.items()))
    names = ", ".join(recording_name(uri, roots=(root,)) for uri in ignored.examples[:5])
    more = ", ..." if ignored.count > 5 else ""
    logger.warning("not audio, ignored %d (%s): %s%s", ignored.count, reasons, names, more)


def relative_name(uri: str, *, root: str) -> str:
    """`uri` relative to the source `root` as stored (a single-file source: its name),
    undecodable bytes escaped."""
    trimmed = root.rstrip("/")
    relative = uri[len(trimmed) + 1 :] if uri.startswith(trimmed + "/") else uri.rsplit("/", 1)[-1]
    return printable(relative)


def as_location(source: SourceLocation | str) -> SourceLocation:
    """A parsed source as it is, a string parsed (tests and one-off callers)."""
    return source if isinstance(source, SourceLocation) else parse_source(source)


def manifest_metadata(
    source: SourceLocation | str, *, manifest: str | None
) -> dict[str, dict[str, str]]:
    """The manifest's columns by source URI ({} without one); raises ManifestInvalid."""
    root = as_location(source).uri
    path = Path(manifest) if manifest is not None else default_manifest(root)
    if path is None:
        return {}
    return metadata_by_uri(read_manifest(path), source_root=root)


def check_source(source: SourceLocation | str) -> None:
    """Refuse a local source root that is missing or cannot be listed, in a millisecond.

    Raises SourceNotFound or SourceUnreadable (and UnsupportedSource for an unknown
    scheme). Buckets are not contacted here: their listing reports its own errors.
    """
    location = as_location(source)
    if not location.is_local:
        return
    root = location.uri
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
