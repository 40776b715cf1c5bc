"""medasr's own temp folders: private, named after their process, swept when it is gone.

Every temp file medasr writes (today: the local copy of a remote recording, patient
audio) lives in a folder it creates with mode 0700 and names
``medasr-<pid>-<start>-<purpose>-<random>`` under the temp directory (TMPDIR), the file
itself created 0600 (O_EXCL, never following a planted link). A normal end removes the
folder; SIGKILL, the OOM killer or a second Ctrl-C cannot. So at start-up
`remove_dead_leftovers` deletes the folders of our user whose process has ended: the pid
is not running, or runs a newer process (its start time, in clock ticks since boot,
differs from the one in the name), so a reused pid never protects a leftover and a
live run's folder is never touched.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from config.private_files import open_private_file

logger = logging.getLogger("medasr.scratch")

_NAME = re.compile(r"medasr-(\d+)-(\d+)-")


def _start_ticks(pid: int) -> int | None:
    """When `pid` started (clock ticks since boot, /proc); None if it does not run or the
    system does not say."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[-1].split()
    except OSError:
        return None
    if len(fields) < 20 or fields[0] in (b"Z", b"X"):  # a zombie has ended
        return None
    return int(fields[19])  # field 22 of stat; fields here start at field 3


def _owner_alive(pid: int, start_ticks: int) -> bool:
    """Whether the process that made a folder (pid and start time) still runs."""
    if pid == os.getpid():
        return True
    if not os.path.isdir("/proc/self"):  # no /proc: a live pid keeps its folders
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return _start_ticks(pid) == start_ticks


@contextlib.contextmanager
def private_folder(purpose: str) -> Iterator[Path]:
    """A new 0700 folder named after this process, removed with all it holds afterwards."""
    prefix = f"medasr-{os.getpid()}-{_start_ticks(os.getpid()) or 0}-{purpose}-"
    folder = Path(tempfile.mkdtemp(prefix=prefix))  # mkdtemp makes it 0700
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def create_private_file(path: Path) -> BinaryIO:
    """Open a new file only its owner can read (0600) for writing; OSError if it exists."""
    return open_private_file(path)


def remove_dead_leftovers(temp_dir: str | None = None) -> int:
    """Delete our user's medasr folders in the temp directory whose process has ended;
    returns how many. Never raises for one folder it cannot remove."""
    root = temp_dir or tempfile.gettempdir()
    removed = 0
    try:
        entries = list(os.scandir(root))
    except OSError as exc:
        logger.warning("cannot look for leftovers in %s: %s", root, exc.strerror)
        return 0
    for entry in entries:
        match = _NAME.match(entry.name)
        if match is None or not entry.is_dir(follow_symlinks=False):
            continue
        with contextlib.suppress(OSError):
            if entry.stat(follow_symlinks=False).st_uid != os.getuid():
                continue
            if _owner_alive(int(match.group(1)), int(match.group(2))):
                continue
            shutil.rmtree(entry.path)
            removed += 1
    return removed
