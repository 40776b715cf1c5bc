"""The decoding worker: `python -m tasks.libav.worker REQUESTS_FD ANSWERS_FD`.

One process decodes one file at a time, for as many files as its parent sends, so a run
pays for a Python start once per worker instead of an ffmpeg start per file, and libav
runs beside the parent's event loop, not under its GIL. Framing is
`multiprocessing.connection`'s (length-prefixed messages over the two pipes):

    parent -> worker    the absolute path, as bytes (os.fsencode)
    worker -> parent    b"ready" once, after PyAV is imported; then per path either
                        b"" (ffmpeg should decode it) or a JSON description followed by
                        a message of 16 kHz mono s16le samples

The worker ends when its parent closes the request pipe, or dies (end of file), and when
an answer cannot be written (the parent is gone). It writes nothing else anywhere.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from multiprocessing.connection import Connection

READY = b"ready"


def serve(requests: Connection, answers: Connection) -> None:
    """Answer paths until the parent closes its end."""
    from tasks.libav.decode import decode_whole  # after the fds are ours: a failed import
    # of PyAV ends the worker before READY, which the parent reads as "no libav here"

    answers.send_bytes(READY)
    while True:
        try:
            path = os.fsdecode(requests.recv_bytes())
        except EOFError:
            return
        decoded = decode_whole(path)
        if decoded is None:
            answers.send_bytes(b"")
            continue
        described, pcm = decoded
        answers.send_bytes(json.dumps(described.as_dict()).encode())
        answers.send_bytes(pcm)


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


if __name__ == "__main__":
    sys.exit(main(sys.argv))
