"""Objects in a bucket through fsspec: list a prefix, and the one translation of I/O errors.

storage/sources.py is the front (parse a source, list, fingerprint, fetch); this module
is its remote half, as storage/local_files.py is its local one. `translated_io` turns
the failures of the filesystem libraries (local or remote) into SourceError, once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import fsspec

from storage.errors import (
    SourceError,
    SourceNotFound,
    SourceUnavailable,
    SourceUnreadable,
    UnsupportedSource,
)
from storage.local_files import printable
from storage.records import Listing, SkippedFile, SourceFile

__all__ = ["filesystem_class", "list_remote", "open_filesystem", "translated_io"]

# Exceptions from these libraries are I/O failures of a remote source, not our bugs.
_REMOTE_LIBRARIES = frozenset(
    {"botocore", "aiobotocore", "aiohttp", "s3fs", "fsspec", "gcsfs", "adlfs", "azure", "google"}
)


def filesystem_class(protocol: str) -> type[Any]:
    """fsspec's filesystem class of a scheme; raises UnsupportedSource."""
    try:
        return fsspec.get_filesystem_class(protocol)  # type: ignore[no-any-return]
    except ImportError as exc:
        raise UnsupportedSource(f"{protocol}:// needs an optional package: {exc}") from exc
    except ValueError as exc:
        raise UnsupportedSource(f"unknown source scheme {protocol}://") from exc


def open_filesystem(protocol: str, storage_options: Mapping[str, Any] | None) -> Any:
    """An fsspec filesystem of a scheme with its options; raises UnsupportedSource."""
    try:
        return fsspec.filesystem(protocol, **dict(storage_options or {}))
    except (ImportError, ValueError) as exc:
        raise UnsupportedSource(f"{protocol}:// cannot be opened: {exc}") from exc
    except TypeError as exc:
        raise UnsupportedSource(f"{protocol}://: invalid storage options: {exc}") from exc


def list_remote(
    protocol: str,
    prefix: str,
    *,
    wants: Callable[[str], bool],
    storage_options: Mapping[str, Any] | None,
) -> Listing:
    """The files under `protocol://prefix` that `wants` keeps; a listing stopped part-way
    is a failed folder row of its own. Raises SourceError subclasses."""
    uri = f"{protocol}://{prefix}"
    fs = open_filesystem(protocol, storage_options)
    try:
        with translated_io(uri):
            fs.invalidate_cache()  # a long-lived worker must see tonight's objects
            found: dict[str, dict[str, Any]] = fs.find(prefix, detail=True, withdirs=False)
            if not found and not fs.exists(prefix.split("/", 1)[0]):
                raise SourceNotFound(f"bucket not found: {uri}")
    except SourceUnavailable as exc:
        if not _answers(fs, protocol, prefix):
            raise  # nothing answers at all (endpoint down): the whole run waits
        # A listing that stopped part-way (an error on page 3) says nothing of the rest:
        # the prefix becomes a failed row of its own, retried by the next run.
        why = str(exc).split(": ", 1)[-1]
        stopped = SkippedFile(uri, f"listing stopped part-way: {why}", unreadable=True, folder=True)
        return Listing(files=[], skipped=[stopped])
    files = []
    for path, info in found.items():
        relative = path[len(prefix) :].lstrip("/") or path.rsplit("/", 1)[-1]
        if info.get("type", "file") != "file" or not wants(relative):
            continue
        full_uri = f"{protocol}://{path}"
        files.append(SourceFile(full_uri, int(info.get("size") or 0), _object_version(info)))
    return Listing(files=files, skipped=[])


def _answers(fs: Any, protocol: str, prefix: str) -> bool:
    """Whether the bucket answers a listing at all (after one failed part-way)."""
    bucket = prefix.split("/", 1)[0]
    try:
        with translated_io(f"{protocol}://{bucket}"):
            fs.invalidate_cache()
            fs.ls(bucket, detail=False)
    except SourceError:
        return False
    return True


def _object_version(info: Mapping[str, Any]) -> str:
    for key in ("ETag", "etag", "generation", "md5Hash", "content_md5", "mtime", "LastModified"):
        value = info.get(key)
        if value:
            return str(value)
    return f"size:{info.get('size')}"


@contextmanager
def translated_io(uri: str) -> Iterator[None]:
    """Turn I/O failures of the filesystem libraries into SourceError, once."""
    shown = printable(uri)
    try:
        yield
    except SourceError:
        raise
    except FileNotFoundError as exc:
        raise SourceNotFound(f"not found: {shown}") from exc
    except (PermissionError, IsADirectoryError) as exc:
        raise SourceUnreadable(f"cannot read {shown}: {exc.strerror or exc}") from exc
    except OSError as exc:
        raise SourceUnavailable(f"cannot read {shown}: {_short(exc)}") from exc
    except Exception as exc:
        if type(exc).__module__.split(".")[0] not in _REMOTE_LIBRARIES:
            raise
        if "credential" in type(exc).__name__.lower():
            raise SourceUnreadable(f"cannot read {shown}: no usable credentials") from exc
        raise SourceUnavailable(f"cannot read {shown}: {_short(exc)}") from exc


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text[:200]}" if text else type(exc).__name__
