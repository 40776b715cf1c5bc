"""Export files written inside their folder only: never through a link, never half, private.

Transcripts are patient data, so every export file is written the same way:

- folders medasr creates are 0700 (each missing parent too), files 0600;
- below the folder given to `--out`, every folder is opened relative to its parent with
  O_NOFOLLOW, so a link planted there (to a file or a folder elsewhere) is refused,
  never followed;
- a file is written under a temporary name (O_CREAT | O_EXCL | O_NOFOLLOW) in its own
  folder and only then linked (a new name) or renamed (a replaced one) into place, so a
  crash or a failed write never leaves half a transcript under the final name;
- a name already taken is replaced only when an earlier export left it (a regular 0600
  file of ours with one link) or with `force`; a link or a folder in its place never.

The standard library has no "open beneath this folder without links" call (Linux's
openat2 RESOLVE_BENEATH is not exposed), hence the walk one folder at a time.
"""

from __future__ import annotations

import errno
import hashlib
import os
import secrets
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path, PurePosixPath
from typing import IO

from config.private_files import (
    PRIVATE_FILE_MODE,
    PRIVATE_FOLDER_MODE,
    make_private_folders,
    open_private_file,
)
from storage.errors import ExportRefused

NAME_MAX_BYTES = 255  # one path component (ext4, xfs, btrfs, tmpfs, APFS, NTFS in UTF-16 units)
PATH_MAX_BYTES = 4095  # a whole path, as most tools on Linux can still open it
_HASH_CHARS = 10
_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# Where hard links are not supported, a new name is renamed into place instead.
_NO_HARD_LINKS = frozenset({errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV})


def fit_part(part: str, *, max_bytes: int = NAME_MAX_BYTES) -> str:
    """`part` when it fits in `max_bytes` of UTF-8, else its head, a hash of all of it and
    its extension: stable, and two long names that differ anywhere stay different."""
    encoded = part.encode("utf-8", "surrogateescape")
    if len(encoded) <= max_bytes:
        return part
    stem, dot, extension = part.rpartition(".")
    tail = f".{extension}" if dot and stem and len(extension.encode()) <= 16 else ""
    digest = hashlib.sha256(encoded).hexdigest()[:_HASH_CHARS]
    budget = max_bytes - len(tail.encode()) - len(digest) - 1
    head = encoded[:budget].decode("utf-8", "ignore")  # never half a character
    return f"{head}~{digest}{tail}"


def fit_path(relative: PurePosixPath, *, room_bytes: int) -> PurePosixPath:
    """`relative` with each part fitted, and its folders folded into one when the whole
    path would not fit in `room_bytes`."""
    parts = [fit_part(p) for p in relative.parts]
    if len("/".join(parts).encode("utf-8", "surrogateescape")) <= room_bytes:
        return PurePosixPath(*parts)
    return PurePosixPath(fit_part("~".join(relative.parts[:-1])), parts[-1])


class ExportFolder:
    """The folder given to `--out`, held open: files are written beneath it, never elsewhere."""

    def __init__(self, path: Path, *, force: bool) -> None:
        """Creates `path` (0700) if needed and opens it. Raises OSError."""
        make_private_folders(path)
        self._fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        self._force = force

    def close(self) -> None:
        """Let go of the folder."""
        os.close(self._fd)

    def write_bytes(self, relative: PurePosixPath, data: bytes) -> None:
        """Write `data` at `relative` beneath the folder. Raises ExportRefused, OSError."""
        folder_fd = _open_beneath(self._fd, relative.parts[:-1])
        try:
            with staged_file(folder_fd, relative.name, force=self._force) as handle:
                handle.write(data)
        finally:
            os.close(folder_fd)


@contextmanager
def private_replace(out_path: Path, *, force: bool) -> Iterator[IO[str]]:
    """A 0600 text file staged beside `out_path` (folders made 0700), put in place on success.

    Raises ExportRefused (a link, a folder or a file medasr did not write in the way;
    text that is not valid Unicode) and OSError.
    """
    make_private_folders(out_path.parent)
    folder_fd = os.open(out_path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        with (
            staged_file(folder_fd, out_path.name, force=force) as raw,
            open(raw.fileno(), "w", encoding="utf-8", newline="", closefd=False) as text,
        ):
            try:
                yield text
            except UnicodeError as exc:
                raise ExportRefused("a transcript is not valid text (UTF-8)") from exc
    finally:
        os.close(folder_fd)


@contextmanager
def staged_file(folder_fd: int, name: str, *, force: bool) -> Iterator[IO[bytes]]:
    """A new 0600 file under a temporary name in `folder_fd`, linked or renamed to `name`
    when the block ends without an error (removed otherwise). Raises ExportRefused, OSError."""
    replacing = _may_replace(folder_fd, name, force=force)
    temp = f".medasr-export-{secrets.token_hex(6)}.tmp"
    handle = open_private_file(temp, dir_fd=folder_fd)
    try:
        with handle:
            yield handle
        _put_in_place(folder_fd, temp, name, replacing=replacing)
    finally:
        with suppress(FileNotFoundError):
            os.unlink(temp, dir_fd=folder_fd)


def _may_replace(folder_fd: int, name: str, *, force: bool) -> bool:
    """Whether `name` exists and may be replaced. Raises ExportRefused when it may not."""
    try:
        found = os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(found.st_mode):
        raise ExportRefused("a symbolic link is in its place; exports never follow links")
    if not stat.S_ISREG(found.st_mode):
        raise ExportRefused("something that is not a file is in its place")
    if not force and not _left_by_an_export(found):
        raise ExportRefused("a file medasr did not write is in its place; --force replaces it")
    return True


def _left_by_an_export(found: os.stat_result) -> bool:
    # What an export leaves: our own regular file, 0600, with no other name (a hard link
    # to someone's file has two).
    private = stat.S_IMODE(found.st_mode) == PRIVATE_FILE_MODE
    return found.st_uid == os.geteuid() and private and found.st_nlink == 1


def _put_in_place(folder_fd: int, temp: str, name: str, *, replacing: bool) -> None:
    if replacing:
        os.rename(temp, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
        return
    try:  # a link fails if the name was taken meanwhile: nothing is overwritten
        os.link(temp, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd, follow_symlinks=False)
    except FileExistsError as exc:
        raise ExportRefused("its name was taken while the export ran") from exc
    except OSError as exc:
        if exc.errno not in _NO_HARD_LINKS:
            raise
        _may_replace(folder_fd, name, force=False)
        os.rename(temp, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)


def _open_beneath(root_fd: int, parts: Sequence[str]) -> int:
    """The folder `parts` beneath `root_fd`, each made 0700 if missing and none a link.

    Returns an open descriptor (the caller closes it). Raises ExportRefused, OSError.
    """
    fd = os.dup(root_fd)
    try:
        for part in parts:
            with suppress(FileExistsError):
                os.mkdir(part, PRIVATE_FOLDER_MODE, dir_fd=fd)
            try:
                child = os.open(part, _FOLDER_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise ExportRefused(
                        f"{part!r} on its path is a link or not a folder; "
                        "exports never follow links"
                    ) from exc
                raise
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd
