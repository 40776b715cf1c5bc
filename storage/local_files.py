"""Listing a local folder with os.scandir: symbolic link loops, unreadable entries,
special files, names that are not UTF-8, and files still being written.

fsspec's local walk follows symbolic link loops forever, so local folders are walked
here; every folder is entered once (by device and inode). Nothing here raises for one
bad entry: it becomes a SkippedFile with the reason in words.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from collections.abc import Callable, Iterator

from storage.errors import SourceNotFound, SourceUnreadable
from storage.records import Listing, SkippedFile, SourceFile


def list_local(root: str, *, wants: Callable[[str], bool], settle_s: float) -> Listing:
    """List wanted files under a folder, or one file; raises SourceNotFound, SourceUnreadable."""
    try:
        root_stat = os.stat(root)
    except FileNotFoundError as exc:
        raise SourceNotFound(f"source folder not found: {printable(root)}") from exc
    except OSError as exc:
        raise SourceUnreadable(f"cannot open source {printable(root)}: {exc.strerror}") from exc
    skipped: list[SkippedFile] = []
    if stat.S_ISDIR(root_stat.st_mode):
        candidates = list(_walk_local(root, root_stat, wants=wants, skipped=skipped))
    elif stat.S_ISREG(root_stat.st_mode):
        name = os.path.basename(root)
        candidates = [(root, root_stat)] if wants(name) else []
    else:
        raise SourceUnreadable(f"source is neither a folder nor a file: {printable(root)}")
    settled = _settled(candidates, settle_s=settle_s, skipped=skipped)
    files = _second_look(settled, skipped=skipped)
    return Listing(files=files, skipped=skipped)


def _walk_local(
    root: str,
    root_stat: os.stat_result,
    *,
    wants: Callable[[str], bool],
    skipped: list[SkippedFile],
) -> Iterator[tuple[str, os.stat_result]]:
    visited = {(root_stat.st_dev, root_stat.st_ino)}
    pending = [(root, "")]
    while pending:
        folder, prefix = pending.pop()
        try:
            with os.scandir(folder) as scan:
                entries = sorted(scan, key=lambda e: e.name)
        except OSError as exc:  # what it holds is unknown: a failed row of its own
            reason = f"cannot read folder: {exc.strerror}"
            skipped.append(SkippedFile(printable(folder), reason, unreadable=True, folder=True))
            continue
        for entry in entries:
            relative = prefix + entry.name
            try:
                entry_stat = entry.stat()  # follows symbolic links
            except OSError as exc:
                if wants(relative):
                    skipped.append(_stat_failure(entry, exc))
                continue
            if stat.S_ISDIR(entry_stat.st_mode):
                key = (entry_stat.st_dev, entry_stat.st_ino)
                if key in visited:
                    reason = "symbolic link to a folder already listed (link loop)"
                    skipped.append(SkippedFile(printable(entry.path), reason))
                    continue
                visited.add(key)
                pending.append((entry.path, relative + "/"))
            elif wants(relative):
                yield entry.path, entry_stat


def _stat_failure(entry: os.DirEntry[str], exc: OSError) -> SkippedFile:
    """A wanted entry whose information cannot be read: unreadable, or just gone."""
    uri = printable(entry.path)
    if exc.errno == errno.ELOOP:
        return SkippedFile(uri, "symbolic link loop", unreadable=True)
    if exc.errno == errno.ENOENT:
        if entry.is_symlink():
            return SkippedFile(uri, "broken symbolic link", unreadable=True)
        return SkippedFile(uri, "removed while listing")
    return SkippedFile(uri, f"cannot read file information: {exc.strerror}", unreadable=True)


def _settled(
    candidates: list[tuple[str, os.stat_result]], *, settle_s: float, skipped: list[SkippedFile]
) -> list[tuple[str, os.stat_result]]:
    now_ns = time.time_ns()
    kept = []
    for path, file_stat in candidates:
        unusable = _unusable(path, file_stat, now_ns=now_ns, settle_s=settle_s)
        if unusable is None:
            kept.append((path, file_stat))
        else:
            skipped.append(unusable)
    return kept


def _unusable(
    path: str, file_stat: os.stat_result, *, now_ns: int, settle_s: float
) -> SkippedFile | None:
    uri = printable(path)
    if not _is_utf8(path):
        return SkippedFile(uri, "file name is not valid UTF-8; rename it", unreadable=True)
    if not stat.S_ISREG(file_stat.st_mode):
        return SkippedFile(uri, "not a regular file", unreadable=True)
    if not os.access(path, os.R_OK):
        return SkippedFile(uri, "no permission to read", unreadable=True)
    # A future mtime (a device with a wrong clock) is not "being written"; the second look guards.
    age_s = (now_ns - file_stat.st_mtime_ns) / 1e9
    if 0 <= age_s < settle_s:
        return SkippedFile(uri, f"still being written (modified {age_s:.1f} s ago)")
    return None


def _second_look(
    settled: list[tuple[str, os.stat_result]], *, skipped: list[SkippedFile]
) -> list[SourceFile]:
    files = []
    for path, first in settled:
        try:
            second = os.stat(path)
        except OSError:
            skipped.append(SkippedFile(printable(path), "removed while listing"))
            continue
        if (second.st_size, second.st_mtime_ns) != (first.st_size, first.st_mtime_ns):
            reason = "still being written (changed while listing)"
            skipped.append(SkippedFile(printable(path), reason))
            continue
        files.append(SourceFile(path, second.st_size, str(second.st_mtime_ns)))
    return files


def require_regular_file(path: str) -> None:
    try:
        file_stat = os.stat(path)
    except FileNotFoundError as exc:
        raise SourceNotFound(f"file not found: {printable(path)}") from exc
    except OSError as exc:
        raise SourceUnreadable(f"cannot read {printable(path)}: {exc.strerror}") from exc
    if not stat.S_ISREG(file_stat.st_mode):
        raise SourceUnreadable(f"not a regular file: {printable(path)}")


def printable(path: str) -> str:
    """A path with undecodable bytes shown as escapes, safe to store and print."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _is_utf8(path: str) -> bool:
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
