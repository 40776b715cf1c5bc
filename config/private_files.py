"""Folders only their owner may open (0700) and files made new for their owner alone (0600).

Patient audio, transcripts, exports, the journal of paid answers, keys and the SQLite
file are written through these, so each is private from its first byte: a file is
created with O_CREAT | O_EXCL | O_NOFOLLOW, never opened over an old file (which would
keep its own, wider mode) nor through a link planted in its place; each missing folder
is made 0700 (a umask only takes bits away; `mkdir(parents=True)` would make the
parents 0755). Plain `os` calls: every room may use them.
"""

from __future__ import annotations

import os
from contextlib import suppress
from pathlib import Path
from typing import BinaryIO, Final

PRIVATE_FOLDER_MODE: Final = 0o700
PRIVATE_FILE_MODE: Final = 0o600
NEW_FILE_FLAGS: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def make_private_folders(path: Path) -> None:
    """Create `path` and each missing parent with mode 0700; existing folders stay as they are.

    Raises OSError (permission, a file in the way).
    """
    missing: list[Path] = []
    folder = path
    while not os.path.lexists(folder) and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    for folder in reversed(missing):
        with suppress(FileExistsError):  # made meanwhile by another process: kept as it is
            os.mkdir(folder, PRIVATE_FOLDER_MODE)


def create_private_file(path: str | Path, *, dir_fd: int | None = None) -> int:
    """A descriptor of a new file only its owner can read (0600), open for writing;
    FileExistsError when anything (a link included) has that name. Raises OSError."""
    return os.open(path, NEW_FILE_FLAGS, PRIVATE_FILE_MODE, dir_fd=dir_fd)


def open_private_file(path: str | Path, *, dir_fd: int | None = None) -> BinaryIO:
    """`create_private_file` as a binary file object (the caller closes it)."""
    return os.fdopen(create_private_file(path, dir_fd=dir_fd), "wb")


def write_private_file(path: Path, data: bytes) -> None:
    """Write `data` to a new file only its owner can read (0600); OSError if it exists."""
    with open_private_file(path) as handle:
        handle.write(data)
