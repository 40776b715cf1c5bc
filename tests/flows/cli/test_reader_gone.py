"""Standard output over a pipe whose reader has left: writes are dropped, none raises."""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
from collections.abc import Iterator

import pytest

from flows.cli.reader_gone import outliving


@pytest.fixture
def left_pipe() -> Iterator[io.TextIOWrapper]:
    """A text stream like sys.stdout over a pipe whose reader has already closed."""
    read_fd, write_fd = os.pipe()
    os.close(read_fd)
    stream = io.TextIOWrapper(io.BufferedWriter(io.FileIO(write_fd, "w")), line_buffering=True)
    yield stream
    with contextlib.suppress(BrokenPipeError):  # what a plain stream still holds
        stream.close()


def test_a_plain_stream_raises_once_its_reader_has_left(left_pipe: io.TextIOWrapper) -> None:
    with pytest.raises(BrokenPipeError):
        print("medasr: 3 files to process", file=left_pipe, flush=True)


def test_every_write_after_the_reader_left_is_dropped(left_pipe: io.TextIOWrapper) -> None:
    stream = outliving(left_pipe)
    assert stream is not left_pipe
    assert isinstance(stream, io.TextIOWrapper)
    assert stream.line_buffering
    print("medasr: 3 files to process", file=stream, flush=True)
    for done in range(1, 4):
        stream.write(f"[{done}/3] done\n")
    stream.write("summary without a newline")
    stream.flush()
    # The descriptor now leads to /dev/null: a child inheriting it cannot fail either.
    assert os.path.samestat(os.fstat(stream.fileno()), os.stat(os.devnull))


def test_a_file_or_terminal_is_left_as_it_is() -> None:
    with tempfile.TemporaryFile("w+") as file:
        assert outliving(file) is file  # type: ignore[arg-type]
    captured = io.StringIO()
    assert outliving(captured) is captured
