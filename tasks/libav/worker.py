"""The decoding worker: `python -m tasks.libav.worker REQUESTS_FD ANSWERS_FD`.

One process decodes one file at a time, for as many files as its parent sends, so a run
pays for a Python start once per worker instead of an ffmpeg start per file, and libav
runs beside the parent's event loop, not under its GIL. Framing is
`multiprocessing.connection`'s (length-prefixed messages over the two pipes):

    parent -> worker    the absolute path, as bytes (os.fsencode)
    worker -> parent    b"ready" once, after PyAV is imported; then per path either
                        b"" (ffmpeg should decode it), or
                        a JSON description with "streamed": false, then one message of
                        16 kHz mono s16le samples (a file of at most MAX_WHOLE_MS, decoded
                        whole and judged fit before it is sent), or
                        a JSON description with "streamed": true, then the samples in
                        messages of about PIECE_BYTES as they decode, b"" after the last,
                        and the verdict: b"ok", or b"unfit" (ffmpeg should decode it
                        from its start; the pieces sent are the start of its bytes)

While it streams, the worker waits on the answer pipe: the parent reads a piece when the
splitter wants samples, so neither side holds more than a piece or two. The worker ends
when its parent closes the request pipe, or dies (end of file), and when an answer cannot
be written (the parent is gone). It writes nothing else anywhere.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from tasks.libav.decode import Stream

READY = b"ready"
END = b""  # after the last piece of a streamed file
FIT = b"ok"
UNFIT = b"unfit"


def serve(requests: Connection, answers: Connection) -> None:
    """Answer paths until the parent closes its end."""
    from tasks.libav.decode import open_stream  # after the fds are ours: a failed import
    # of PyAV ends the worker before READY, which the parent reads as "no libav here"

    answers.send_bytes(READY)
    while True:
        try:
            path = os.fsdecode(requests.recv_bytes())
        except EOFError:
            return
        stream = open_stream(path)
        if stream is None:
            answers.send_bytes(b"")
            continue
        try:
            _answer(answers, stream)
        finally:
            stream.close()


def _answer(answers: Connection, stream: Stream) -> None:
    """One open file's answer: whole if short, else in pieces (or b"" for ffmpeg)."""
    from tasks.libav.decode import MAX_WHOLE_MS, PIECE_BYTES, decode_whole

    if stream.described.duration_ms <= MAX_WHOLE_MS:
        pcm = decode_whole(stream)
        if pcm is None:
            answers.send_bytes(b"")
            return
        answers.send_bytes(_description(stream, streamed=False))
        answers.send_bytes(pcm)
        return
    if not stream.streamable:
        answers.send_bytes(b"")
        return
    answers.send_bytes(_description(stream, streamed=True))
    for piece in stream.iter_pieces(piece_bytes=PIECE_BYTES, check_length=stream.exact):
        answers.send_bytes(piece)
    answers.send_bytes(END)
    answers.send_bytes(FIT if stream.fit else UNFIT)


def _description(stream: Stream, *, streamed: bool) -> bytes:
    fields = {**stream.described.as_dict(), "streamed": streamed, "exact": stream.exact}
    return json.dumps(fields).encode()


def main(argv: list[str]) -> int:
    # Ctrl-C reaches the whole process group: the parent decides, then closes the pipe.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    requests = Connection(int(argv[1]), writable=False)
    answers = Connection(int(argv[2]), readable=False)
    try:
        serve(requests, answers)
    except (BrokenPipeError, EOFError, ImportError):
        return 1
    return 0


def run(argv: list[str]) -> NoReturn:
    """`main`, then the process ends at once (`os._exit`), as multiprocessing's children
    do: every answer is in the pipe by then and the worker holds nothing else to flush,
    while the interpreter's teardown with PyAV loaded is about 30 ms that the parent,
    closing its pool at the end of every run, would wait for per worker. An error
    `main` does not expect still ends the worker the usual way, with its traceback."""
    os._exit(main(argv))


if __name__ == "__main__":
    run(sys.argv)
