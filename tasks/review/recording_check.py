"""Is the file at a recording's path still the recording that was transcribed?

The store keeps what a run saw of each recording: its size, its listing version (the
file's mtime_ns, or an object's ETag) and the sha256 of the bytes it transcribed. A
file may be replaced after that (another patient's recording moved over it, a link put
in its place), and audio served from it would be another voice under this item's name.

The check, per request: the path and every link on it must stay inside the run's
source root (a link out of it is never followed); a size that differs decides at once;
otherwise the file's identity (device, inode, size, mtime and ctime: ctime cannot be
set back by a user, so an overwrite or a rename shows) is looked up among the files
this process has hashed before; only an identity it has not seen costs the full
sha256. A recording stored without a sha256 (none is, once transcribed) falls back to
its size and listing version.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from storage.records import ItemRecord

_BLOCK_BYTES = 1024 * 1024


class AudioCheck(StrEnum):
    """What the check found; every value but SAME means no audio is served."""

    SAME = "same"
    CHANGED = "changed"  # other bytes than the ones transcribed
    LINK_OUTSIDE = "link_outside"  # the path leads out of the source root
    MISSING = "missing"  # no regular file there


@dataclass(frozen=True)
class FileIdentity:
    """What a stat says of a file that an edit, a rename or a copy over it changes."""

    device: int
    inode: int
    size_bytes: int
    mtime_ns: int
    ctime_ns: int


class VerifiedFiles:
    """Per process: the identity each recording's file had when its content hashed right."""

    def __init__(self) -> None:
        self._known: dict[int, FileIdentity] = {}
        self._lock = threading.Lock()

    def knows(self, item_id: int, identity: FileIdentity) -> bool:
        """Whether this very file was verified for the item before."""
        with self._lock:
            return self._known.get(item_id) == identity

    def remember(self, item_id: int, identity: FileIdentity) -> None:
        """The file with this identity holds the item's recording."""
        with self._lock:
            self._known[item_id] = identity


def check_local_recording(
    path: Path, *, item: ItemRecord, roots: Sequence[Path], verified: VerifiedFiles
) -> AudioCheck:
    """Whether `path` still holds the item's recording (blocking: may hash the file)."""
    absolute = Path(os.path.abspath(path))
    try:
        real = absolute.resolve(strict=True)
        stat = real.stat()
    except (OSError, RuntimeError):
        return AudioCheck.MISSING
    if not _inside_its_root(absolute, real, roots=roots):
        return AudioCheck.LINK_OUTSIDE
    if not real.is_file():
        return AudioCheck.MISSING
    identity = FileIdentity(
        stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns
    )
    if stat.st_size != item.size_bytes:
        return AudioCheck.CHANGED
    if verified.knows(item.id, identity):
        return AudioCheck.SAME
    if item.sha256 is None:
        same = str(stat.st_mtime_ns) == item.source_version
        return AudioCheck.SAME if same else AudioCheck.CHANGED
    if file_sha256(real) != item.sha256:
        return AudioCheck.CHANGED
    verified.remember(item.id, identity)
    return AudioCheck.SAME


def file_sha256(path: Path) -> str:
    """The sha256 (hex) of a file's bytes, read a block at a time."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(_BLOCK_BYTES):
            digest.update(block)
    return digest.hexdigest()


def _inside_its_root(absolute: Path, real: Path, *, roots: Sequence[Path]) -> bool:
    """The resolved file lies under the resolved root its path names (no root: no link)."""
    for root in roots:
        root_absolute = Path(os.path.abspath(root))
        if absolute.is_relative_to(root_absolute):
            return real.is_relative_to(root_absolute.resolve())
    return real == absolute
