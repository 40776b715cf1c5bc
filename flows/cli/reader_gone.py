"""Standard output that outlives its reader: `medasr run SOURCE | head -1`.

Once the reader of a pipe has left, every write to it fails (EPIPE: Python ignores
SIGPIPE, so a write raises BrokenPipeError instead of ending the process). medasr writes
to stdout from many places: its progress lines, its summary table, Prefect's start-up
notice, Rich, click. Whichever met the closed pipe first used to raise in the middle of
a run and end it with files still claimed. Here the stream itself takes care of it: the
first failing write points the descriptor at /dev/null, so that write and every later
one (ours, a library's, the interpreter's last flush) is dropped without raising, and
the run ends as its result says. Standard error is kept the same way (`2>&1 | head`).
"""

from __future__ import annotations

import io
import os
import stat
import sys
from typing import Any, BinaryIO, TextIO, cast

__all__ = ["outlive_readers"]


class _ReaderGoneDropping(io.FileIO):
    """A descriptor's writes; once its reader has left, later writes go to /dev/null."""

    def write(self, data: Any) -> int:
        try:
            return super().write(data)
        except BrokenPipeError:
            _point_at_devnull(self.fileno())
            return memoryview(data).nbytes  # dropped, as if written: nothing retries it


def _point_at_devnull(fd: int) -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def outlive_readers() -> None:
    """Make stdout and stderr drop what they are given once their reader has left."""
    sys.stdout = outliving(sys.stdout)
    sys.stderr = outliving(sys.stderr)


def outliving(stream: TextIO) -> TextIO:
    """`stream` rebuilt over a descriptor that drops writes once its reader has left;
    `stream` itself when it is no pipe or socket (a terminal, a file, a test's capture)."""
    if not isinstance(stream, io.TextIOWrapper) or not _reader_may_leave(stream):
        return stream
    stream.flush()
    raw = _ReaderGoneDropping(stream.fileno(), "w", closefd=False)
    # Unbuffered (python -u, PYTHONUNBUFFERED) writes straight to the descriptor, as Python does.
    binary = cast(BinaryIO, raw if stream.write_through else io.BufferedWriter(raw))
    return io.TextIOWrapper(
        binary,
        encoding=stream.encoding,
        errors=stream.errors,
        line_buffering=stream.line_buffering,
        write_through=stream.write_through,
    )


def _reader_may_leave(stream: io.TextIOWrapper) -> bool:
    try:
        mode = os.fstat(stream.fileno()).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)
