"""Taking an export back: the files it wrote go when its audit event cannot be written.

An export and its `exported` event exist together or not at all. The event is written
after the files (it holds how many records left), so when the store refuses it (another
writer holds it, it is down) the command removes what this export wrote: every regular
file under `--out` that is new or was replaced since the export began (its inode or
mtime changed). Files an earlier export left untouched stay; links are never followed.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

Snapshot = dict[str, tuple[int, int]]  # path -> (inode, mtime in ns)


def files_under(out: Path) -> Snapshot:
    """The regular files at or under `out` now (a file, or a folder's tree)."""
    if out.is_symlink() or not out.exists():
        return {}
    if not out.is_dir():
        found = out.stat()
        return {str(out): (found.st_ino, found.st_mtime_ns)}
    files: Snapshot = {}
    for folder, _, names in os.walk(out):  # links to folders are not followed
        for name in names:
            path = os.path.join(folder, name)
            found = os.lstat(path)
            if os.path.isfile(path) and not os.path.islink(path):
                files[path] = (found.st_ino, found.st_mtime_ns)
    return files


def remove_written(out: Path, *, before: Snapshot) -> int:
    """Remove the files written under `out` since `before` was taken; how many."""
    removed = 0
    for path, seen in files_under(out).items():
        if before.get(path) != seen:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
                removed += 1
    return removed
