"""Audio sources: list, fingerprint and fetch files in a local folder or a bucket (fsspec).

Local folders are walked with `os.scandir` (fsspec's local walk follows symbolic link
loops forever); every other scheme (s3://, and gs:// or az:// when their fsspec extra is
installed) goes through fsspec. URIs are normalized once here: an absolute local path,
not percent-encoded, without `file://` and resolved through symbolic links (a folder
reached through a link is the folder it leads to, so its files are registered once), or
`scheme://bucket/key`. Nothing is ever
read whole into memory: hashing and downloads stream in 1 MiB blocks.
"""

from __future__ import annotations

import hashlib
import os
import urllib.parse
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import IO, Any

from storage.errors import UnsupportedSource
from storage.local_files import iter_local, require_regular_file
from storage.not_audio import not_audio_reason
from storage.records import IgnoredFiles, Listing, SkippedFile, SourceFile
from storage.remote_files import filesystem_class, list_remote, open_filesystem, translated_io
from storage.scratch import create_private_file, private_folder

# The extensions medasr listed before every file became a candidate; a caller may still
# pass `extensions` to list only those (tests, benches).
AUDIO_EXTENSIONS = (
    ".wav",
    ".mp3",
    ".m4a",
    ".flac",
    ".ogg",
    ".opus",
    ".webm",
    ".aac",
    ".amr",
    ".mp4",
)
__all__ = [
    "AUDIO_EXTENSIONS",
    "FetchedFile",
    "Fingerprint",
    "Listing",
    "ListingStream",
    "SkippedFile",
    "SourceFile",
    "SourceLocation",
    "fetch_and_fingerprint",
    "fingerprint",
    "iter_audio",
    "list_audio",
    "normalize_source",
    "parse_source",
]
_BLOCK_BYTES = 1 << 20
_REMOTE_READ_BLOCK_BYTES = 8 << 20


@dataclass(frozen=True)
class Fingerprint:
    """Content identity: sha256 (hex) and size in bytes."""

    sha256: str
    size_bytes: int


@dataclass(frozen=True)
class FetchedFile:
    """A readable local path for a source file, and the fingerprint of what was read."""

    path: Path
    fingerprint: Fingerprint


@dataclass(frozen=True)
class SourceLocation:
    """A source parsed once (`parse_source`): pass this down, not the string."""

    protocol: str | None  # None: local path
    path: str  # absolute local path, or the fsspec path without its protocol
    # A local path as named, when a symbolic link on the way makes it differ from `path`
    # (the path an earlier medasr keyed the source's recordings under: flows/setup/).
    given: str | None = None

    @property
    def uri(self) -> str:
        """The canonical form: absolute local path, or `scheme://bucket/key`."""
        return self.path if self.protocol is None else f"{self.protocol}://{self.path}"

    @property
    def is_local(self) -> bool:
        """A local folder or file (no scheme after parsing)."""
        return self.protocol is None


@dataclass(frozen=True)
class _Filters:
    """Which files are recordings: the globs first (what the user asked for), then the
    not-audio rule (counted in `ignored`), or only `extensions` when a caller names them."""

    include: tuple[str, ...]
    exclude: tuple[str, ...]
    extensions: tuple[str, ...] | None
    ignored: IgnoredFiles
    root: str

    def wants(self, relative: str) -> bool:
        name = relative.rsplit("/", 1)[-1]
        if self.extensions is not None and not name.lower().endswith(self.extensions):
            return False
        if self.include and not any(_glob_matches(relative, p) for p in self.include):
            return False
        if self.exclude and any(_glob_matches(relative, p) for p in self.exclude):
            return False
        if self.extensions is None and (reason := not_audio_reason(name)) is not None:
            self.ignored.add(_joined(self.root, relative), reason)
            return False
        return True


def _joined(root: str, relative: str) -> str:
    """The URI of `relative` under a source `root` (a single file: the root itself)."""
    if root.rsplit("/", 1)[-1] == relative:
        return root
    return f"{root.rstrip('/')}/{relative}"


@dataclass
class ListingStream:
    """Files in URI order, read as they are consumed; `skipped` and `ignored` (not audio)
    fill as they are."""

    files: Iterator[SourceFile]
    skipped: list[SkippedFile]
    ignored: IgnoredFiles


def list_audio(
    source: SourceLocation | str,
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    extensions: Sequence[str] | None = None,
    settle_s: float = 2.0,
    storage_options: Mapping[str, Any] | None = None,
) -> Listing:
    """List recordings under a folder, bucket prefix or single file, recursively, sorted
    by URI: every file but those the not-audio rule names (storage/not_audio.py), which
    are counted in `ignored`; with `extensions`, only files ending so.

    Globs match the path relative to the source (`*` crosses folders) or the file name.
    Local files modified less than `settle_s` seconds ago, or changed between two
    looks, are skipped as still being written. Raises SourceNotFound, SourceUnreadable,
    SourceUnavailable, UnsupportedSource. Holds the whole listing: `iter_audio` streams.
    """
    stream = iter_audio(
        source,
        include=include,
        exclude=exclude,
        extensions=extensions,
        settle_s=settle_s,
        storage_options=storage_options,
    )
    files = list(stream.files)
    skipped = sorted(stream.skipped, key=lambda s: s.uri)
    return Listing(files=files, skipped=skipped, ignored=stream.ignored)


def iter_audio(
    source: SourceLocation | str,
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    extensions: Sequence[str] | None = None,
    settle_s: float = 2.0,
    storage_options: Mapping[str, Any] | None = None,
) -> ListingStream:
    """`list_audio` as a stream in URI order: a local folder is read folder by folder as
    the files are consumed (memory: one folder); a bucket is listed whole first (fsspec).
    The source itself is checked now; raises as `list_audio` does."""
    location = source if isinstance(source, SourceLocation) else _parse_location(source)
    filters = _Filters(
        include=tuple(include),
        exclude=tuple(exclude),
        extensions=None if extensions is None else tuple(e.lower() for e in extensions),
        ignored=IgnoredFiles(),
        root=location.uri,
    )
    skipped: list[SkippedFile] = []
    if location.protocol is None:
        files = iter_local(location.path, wants=filters.wants, settle_s=settle_s, skipped=skipped)
        return ListingStream(files=files, skipped=skipped, ignored=filters.ignored)
    listing = list_remote(
        location.protocol, location.path, wants=filters.wants, storage_options=storage_options
    )
    remote = iter(sorted(listing.files, key=lambda f: f.uri))
    return ListingStream(files=remote, skipped=list(listing.skipped), ignored=filters.ignored)


def parse_source(source: str) -> SourceLocation:
    """The source string parsed once, at the edge; raises UnsupportedSource."""
    return _parse_location(source)


def normalize_source(source: str) -> str:
    """The canonical form of a path or URL: absolute local path, or `scheme://bucket/key`."""
    return _parse_location(source).uri


def fingerprint(uri: str, *, storage_options: Mapping[str, Any] | None = None) -> Fingerprint:
    """sha256 and size of a source file, streamed; raises SourceError subclasses."""
    with _open_binary(uri, storage_options) as handle, translated_io(uri):
        digest, size = _copy_hashing(handle, None)
    return Fingerprint(sha256=digest, size_bytes=size)


@contextmanager
def fetch_and_fingerprint(
    uri: str, *, storage_options: Mapping[str, Any] | None = None
) -> Iterator[FetchedFile]:
    """Fetch (remote: a 0600 copy in a 0700 folder of ours, removed after) and hash in
    one read (storage/scratch.py)."""
    location = _parse_location(uri)
    if location.protocol is None:
        require_regular_file(location.path)
        yield FetchedFile(Path(location.path), fingerprint(uri))
        return
    with private_folder("fetch") as private_dir:
        target = private_dir / f"source{_safe_suffix(location.path)}"
        with (
            _open_binary(uri, storage_options) as handle,
            translated_io(uri),
            create_private_file(target) as out,
        ):
            digest, size = _copy_hashing(handle, out)
        yield FetchedFile(target, Fingerprint(sha256=digest, size_bytes=size))


# --- locations -------------------------------------------------------------------------


def _parse_location(source: str) -> SourceLocation:
    if not source or "\x00" in source:
        raise UnsupportedSource(f"not a usable source path or URL: {source!r}")
    if "://" not in source:
        return _local_location(os.path.expanduser(source))
    protocol, rest = source.split("://", 1)
    protocol = protocol.lower()
    if protocol in ("file", "local"):
        parts = urllib.parse.urlsplit(source)
        if parts.netloc not in ("", "localhost"):
            raise UnsupportedSource(f"file:// URL with a remote host is not supported: {source}")
        return _local_location(urllib.parse.unquote(parts.path))
    if protocol in _NOT_WALKABLE:  # fsspec reads one URL but lists no folder there
        raise UnsupportedSource(
            f"{protocol}:// is not a source medasr can walk (a web address has no folders "
            "to list): name a local folder or a bucket (s3://, gs://, az://)"
        )
    filesystem_class(protocol)  # fail early and clearly when the scheme is unknown
    if not rest.strip("/") or rest.startswith("/"):  # fsspec: "Cannot traverse all of S3"
        raise UnsupportedSource(
            f"{source} names no bucket: give the bucket to read, as {protocol}://BUCKET "
            f"or {protocol}://BUCKET/FOLDER"
        )
    return SourceLocation(protocol, rest.rstrip("/"))


_NOT_WALKABLE = frozenset({"http", "https"})


def _local_location(path: str) -> SourceLocation:
    """A local path resolved through symbolic links, the path as named kept beside it."""
    named, real = os.path.abspath(path), os.path.realpath(path)
    return SourceLocation(None, real, given=None if named == real else named)


def _glob_matches(relative: str, pattern: str) -> bool:
    name = relative.rsplit("/", 1)[-1]
    if fnmatchcase(relative, pattern) or fnmatchcase(name, pattern):
        return True
    return pattern.startswith("**/") and fnmatchcase(relative, pattern[3:])


def _safe_suffix(path: str) -> str:
    suffix = os.path.splitext(path.rsplit("/", 1)[-1])[1].lower()
    return suffix if suffix.isascii() and suffix[1:].isalnum() and len(suffix) <= 8 else ""


@contextmanager
def _open_binary(uri: str, storage_options: Mapping[str, Any] | None) -> Iterator[IO[bytes]]:
    location = _parse_location(uri)
    if location.protocol is None:
        require_regular_file(location.path)
        with translated_io(uri), open(location.path, "rb") as handle:
            yield handle
        return
    fs = open_filesystem(location.protocol, storage_options)
    with translated_io(uri):
        handle = fs.open(location.path, "rb", block_size=_REMOTE_READ_BLOCK_BYTES)
    try:
        yield handle
    finally:
        handle.close()


def _copy_hashing(handle: IO[bytes], out: IO[bytes] | None) -> tuple[str, int]:
    # One buffer, read into again and again: a fresh 1 MB block per read is memory the
    # kernel maps and zeroes each time (fingerprint: 0.61 -> 0.49 ms CPU per ~580 KB file).
    digest = hashlib.sha256()
    size = 0
    buffer = memoryview(bytearray(_BLOCK_BYTES))
    while count := handle.readinto(buffer):  # type: ignore[attr-defined]
        block = buffer[:count]
        digest.update(block)
        size += count
        if out is not None:
            out.write(block)
    return digest.hexdigest(), size
