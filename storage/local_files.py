"""Listing a local folder with os.scandir: symbolic link loops, unreadable entries,
special files, names that are not UTF-8, and files still being written.

fsspec's local walk follows symbolic link loops forever, so local folders are walked
here; every folder is entered once (by device and inode), and a symbolic link to a file
or folder inside the source is left to the walk's visit of its real path. Nothing here
raises for one bad entry: it becomes a SkippedFile with the reason in words.
"""

from __future__ import annotations

import errno
import operator
import os
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from storage.errors import SourceNotFound, SourceUnreadable
from storage.records import SkippedFile, SourceFile

# Files a second look is batched over, and how recent a modification earns one: a file
# quiet for longer than that was not being written when it was listed (its one stat is
# the listing's only syscall for it; `find` + `stat` is the floor).
SECOND_LOOK_BATCH = 1000
SECOND_LOOK_RECENT_S = 600.0

Run = list[tuple[str, os.stat_result]]  # one folder's files between two of its sub-folders


def iter_local(
    root: str, *, wants: Callable[[str], bool], settle_s: float, skipped: list[SkippedFile]
) -> Iterator[SourceFile]:
    """Wanted files under a folder (or one file) in URI order, read folder by folder as
    the consumer goes; what is left out is appended to `skipped`. The root is checked
    now: raises SourceNotFound, SourceUnreadable."""
    try:
        root_stat = os.stat(root)
    except FileNotFoundError as exc:
        raise SourceNotFound(f"source folder not found: {printable(root)}") from exc
    except OSError as exc:
        raise SourceUnreadable(f"cannot open source {printable(root)}: {exc.strerror}") from exc
    candidates: Iterator[Run]
    if stat.S_ISDIR(root_stat.st_mode):
        candidates = _walk_local(root, root_stat, wants=wants, skipped=skipped)
    elif stat.S_ISREG(root_stat.st_mode):
        wanted = wants(os.path.basename(root))
        candidates = iter([[(root, root_stat)]] if wanted else [])
    else:
        raise SourceUnreadable(f"source is neither a folder nor a file: {printable(root)}")
    return _looked_at(candidates, settle_s=settle_s, skipped=skipped)


def _looked_at(
    runs: Iterator[Run], *, settle_s: float, skipped: list[SkippedFile]
) -> Iterator[SourceFile]:
    """Settled candidates in order. A recent one starts a batch that is looked at again
    when it is full (or the listing ends); until then old files go straight through."""
    reader = _Reader.current()
    batch: Run = []
    for run in runs:
        now_ns = time.time_ns()
        # Older than this: settled and not recent, so only the mode bits and name decide.
        old_ns = now_ns - int(max(settle_s, SECOND_LOOK_RECENT_S) * 1e9)
        for path, file_stat in run:
            if (
                not batch
                and file_stat.st_mtime_ns < old_ns
                and reader.plainly_usable(path, file_stat)
            ):
                yield SourceFile(path, file_stat.st_size, str(file_stat.st_mtime_ns))
                continue
            unusable = _unusable(path, file_stat, now_ns=now_ns, settle_s=settle_s, reader=reader)
            if unusable is not None:
                skipped.append(unusable)
            elif batch or _recent(file_stat, now_ns=now_ns):
                batch.append((path, file_stat))
                if len(batch) >= SECOND_LOOK_BATCH:
                    yield from _second_look(batch, skipped=skipped, only_recent=True)
                    batch = []
            else:
                yield _listed(path, file_stat)
    yield from _second_look(batch, skipped=skipped, only_recent=True)


def _recent(file_stat: os.stat_result, *, now_ns: int) -> bool:
    """Modified lately (or in the future): it may still be written, look again."""
    return file_stat.st_mtime_ns >= now_ns - int(SECOND_LOOK_RECENT_S * 1e9)


def _listed(path: str, file_stat: os.stat_result) -> SourceFile:
    return SourceFile(path, file_stat.st_size, str(file_stat.st_mtime_ns))


def _walk_local(
    root: str,
    root_stat: os.stat_result,
    *,
    wants: Callable[[str], bool],
    skipped: list[SkippedFile],
) -> Iterator[Run]:
    """Depth first in URI order, a run of files at a time: one folder's entries in memory."""
    seen = _Seen(root=os.path.realpath(root), folders={(root_stat.st_dev, root_stat.st_ino)})
    stack = [iter(_folder_entries(root, "", wants=wants, skipped=skipped, seen=seen))]
    while stack:
        run: Run = []
        below: tuple[str, str] | None = None
        for _, path, relative, entry_stat in stack[-1]:
            if stat.S_ISDIR(entry_stat.st_mode):
                below = (path, relative + "/")
                break
            run.append((path, entry_stat))
        if run:
            yield run
        if below is None:
            stack.pop()
            continue
        found = _folder_entries(below[0], below[1], wants=wants, skipped=skipped, seen=seen)
        stack.append(iter(found))


def _folder_entries(
    folder: str,
    prefix: str,
    *,
    wants: Callable[[str], bool],
    skipped: list[SkippedFile],
    seen: _Seen,
) -> list[tuple[str, str, str, os.stat_result]]:
    """One folder's sub-folders and wanted files, in the order their URIs sort: (sort
    key, path, path relative to the source, stat).

    A folder sorts as its name plus "/", so that everything under it sorts where its
    URIs do. Files not wanted cost no syscall; a wanted file or a folder costs one stat
    (DirEntry.stat, following symbolic links).
    """
    try:
        with os.scandir(folder) as scan:
            entries = list(scan)
    except OSError as exc:  # what it holds is unknown: a failed row of its own
        reason = f"cannot read folder: {exc.strerror}"
        skipped.append(SkippedFile(printable(folder), reason, unreadable=True, folder=True))
        return []
    found: list[tuple[str, str, str, os.stat_result]] = []
    for entry in entries:
        relative = prefix + entry.name
        wanted = wants(relative)
        if not wanted and not entry.is_symlink() and not entry.is_dir(follow_symlinks=False):
            continue  # a plain file not wanted: no stat
        if entry.is_symlink() and seen.leads_within(entry.path):
            continue  # what it leads to is listed at its real path: one item, not two
        listed = _listed_entry(entry, relative, wanted=wanted, skipped=skipped, seen=seen)
        if listed is not None:
            found.append(listed)
    found.sort(key=_first)
    return found


def _listed_entry(
    entry: os.DirEntry[str],
    relative: str,
    *,
    wanted: bool,
    skipped: list[SkippedFile],
    seen: _Seen,
) -> tuple[str, str, str, os.stat_result] | None:
    """A folder (once: a link back to one listed is skipped) or a wanted file, statted;
    None for what is not listed."""
    try:
        entry_stat = entry.stat()  # follows symbolic links
    except OSError as exc:
        if wanted:
            skipped.append(_stat_failure(entry, exc))
        return None
    if stat.S_ISDIR(entry_stat.st_mode):
        key = (entry_stat.st_dev, entry_stat.st_ino)
        if key in seen.folders:
            reason = "symbolic link to a folder already listed (link loop)"
            skipped.append(SkippedFile(printable(entry.path), reason))
            return None
        seen.folders.add(key)
        return (entry.name + "/", entry.path, relative, entry_stat)
    return (entry.name, entry.path, relative, entry_stat) if wanted else None


_first = operator.itemgetter(0)


@dataclass
class _Seen:
    """What a walk has entered (by device and inode), and the source's real path."""

    root: str
    folders: set[tuple[int, int]]

    def leads_within(self, link: str) -> bool:
        """A symbolic link to a file or folder inside the source, which the walk lists at
        its real path anyway: following it too would register one recording twice. A link
        to the folder holding it, or above, is a loop: left to the walk to name."""
        try:
            target = os.path.realpath(link, strict=True)
        except OSError:
            return False  # broken, a loop, unreadable: the walk names it
        if not target.startswith(os.path.join(self.root, "")):
            return False  # elsewhere: listed under the link, inside the source's prefix
        holder = os.path.realpath(os.path.dirname(link))
        return not (holder == target or holder.startswith(os.path.join(target, "")))


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


@dataclass(frozen=True)
class _Reader:
    """Who lists: the mode bits answer "may I read it" without a syscall for most files."""

    uid: int
    groups: frozenset[int]

    @classmethod
    def current(cls) -> _Reader:
        return cls(uid=os.geteuid(), groups=frozenset((os.getegid(), *os.getgroups())))

    def may_read(self, path: str, file_stat: os.stat_result) -> bool:
        """The owner, group or other read bit that applies; when it says no, the kernel
        is asked (root, ACLs), so a "no" is never a guess."""
        return self._read_bit(file_stat) or os.access(path, os.R_OK)

    def plainly_usable(self, path: str, file_stat: os.stat_result) -> bool:
        """A regular file with a UTF-8 name that the mode bits let us read: the common
        case, answered without a syscall (False: ask `_unusable`, which says why)."""
        return (
            self._read_bit(file_stat)
            and stat.S_ISREG(file_stat.st_mode)
            and (path.isascii() or _is_utf8(path))
        )

    def _read_bit(self, file_stat: os.stat_result) -> bool:
        if file_stat.st_uid == self.uid:
            return bool(file_stat.st_mode & stat.S_IRUSR)
        if file_stat.st_gid in self.groups:
            return bool(file_stat.st_mode & stat.S_IRGRP)
        return bool(file_stat.st_mode & stat.S_IROTH)


def _unusable(
    path: str, file_stat: os.stat_result, *, now_ns: int, settle_s: float, reader: _Reader
) -> SkippedFile | None:
    if not _is_utf8(path):
        return SkippedFile(printable(path), "file name is not valid UTF-8; rename it", True)
    if not stat.S_ISREG(file_stat.st_mode):
        return SkippedFile(printable(path), "not a regular file", unreadable=True)
    if not reader.may_read(path, file_stat):
        return SkippedFile(printable(path), "no permission to read", unreadable=True)
    # A future mtime (a device with a wrong clock) is not "being written"; the second look guards.
    age_s = (now_ns - file_stat.st_mtime_ns) / 1e9
    if 0 <= age_s < settle_s:
        return SkippedFile(printable(path), f"still being written (modified {age_s:.1f} s ago)")
    return None


def _second_look(
    settled: list[tuple[str, os.stat_result]],
    *,
    skipped: list[SkippedFile],
    only_recent: bool = False,
) -> list[SourceFile]:
    """Files looked at again (`only_recent`: those modified lately or in the future) and
    left out if they changed in between (still being written)."""
    files = []
    now_ns = time.time_ns()
    for path, first in settled:
        if only_recent and not _recent(first, now_ns=now_ns):
            files.append(_listed(path, first))
            continue
        try:
            second = os.stat(path)
        except OSError:
            skipped.append(SkippedFile(printable(path), "removed while listing"))
            continue
        if (second.st_size, second.st_mtime_ns) != (first.st_size, first.st_mtime_ns):
            reason = "still being written (changed while listing)"
            skipped.append(SkippedFile(printable(path), reason))
            continue
        files.append(_listed(path, second))
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
