"""Short mp3, m4a, FLAC, Ogg (Vorbis, Opus) and AIFF files decoded by libav in long-lived
worker processes (tasks/libav/).

An ffmpeg process per compressed file costs its start (about 10 ms of CPU for the static
binary), a pipe and a description to parse: on a backlog of 15 s dictations that is most
of the decoding's cost. Decoding with PyAV in medasr's own process was tried and measured
slower: libav hands the GIL back and forth per packet, so the decoding fought the event
loop that sends the requests (bench/night_bench.py; the figures are in bench/README.md's
history). Here each worker is a process of its own that decodes one file at a time for the
whole run: the same libav decoders and resampler as the ffmpeg command, the same bytes
(tests/tasks/audio/test_decoder_pool.py).

A file of at most 5 minutes comes back whole (`DecodedPcm`), a longer one in pieces as the
splitter reads it (`StreamedPcm`, tasks/audio/worker_stream.py, which hands the rest of
the file to ffmpeg when the worker fails mid-file). `DecoderPool.decode` returns None
whenever ffmpeg should decode the file instead: none of those by its first bytes,
anything the worker finds unfit before the first sample (tasks/libav/decode.py), no
worker free, a worker that died or took longer than the caller's timeout, or PyAV
missing (then the pool stops trying). So every error a person reads is still worded from
ffmpeg's own messages, and a worker's trouble costs a file an ffmpeg run, never a result.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import logging
import os
import struct
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path
from types import TracebackType

from config.runtime import decoding_worker_environment
from tasks.audio.ffmpeg import AudioInfo
from tasks.audio.worker_stream import StreamedPcm, WorkerGone

logger = logging.getLogger(__name__)

# An ID3 tag (mp3), an MP4 file type box (m4a), FLAC, Ogg (Vorbis, Opus), AIFF and AIFF-C.
_MAGIC = ((0, b"ID3"), (4, b"ftyp"), (0, b"fLaC"), (0, b"OggS"), (8, b"AIFF"), (8, b"AIFC"))
_START_TIMEOUT_S = 30.0  # a Python start and `import av`, on a host busy decoding
_STOP_WAIT_S = 2.0
_READY = b"ready"  # tasks/libav/worker.py's first message
# A 15 s dictation is 480 KB of samples: through a pipe of Linux's default 64 KB it
# crosses in pieces, each a wake-up of both processes (1.28 ms of the reader's CPU per
# file, against 0.69 ms through 1 MB, the most an unprivileged process may ask for).
_ANSWER_PIPE_BYTES = 1 << 20
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])  # the worker runs this code
_LAUNCH = (
    "import sys; sys.path.insert(0, sys.argv.pop(1)); "
    "from tasks.libav.worker import run; run(sys.argv)"
)


def looks_compressed(head: bytes) -> bool:
    """Whether the first bytes are an mp3's, MP4/M4A's, FLAC's, Ogg's or AIFF's (what the
    workers decode)."""
    if any(head[at : at + len(magic)] == magic for at, magic in _MAGIC):
        return True
    return len(head) > 1 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0  # an MPEG frame


class DecodedPcm:
    """A recording's 16 kHz mono s16le samples, decoded already; read like ffmpeg's pipe."""

    def __init__(self, pcm: bytes, *, exact: bool = True) -> None:
        self.exact = exact  # whether ffmpeg would read the duration rather than estimate it
        self._pcm = memoryview(pcm)
        self._at = 0

    def __enter__(self) -> DecodedPcm:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def readinto(self, view: memoryview) -> int:
        """Fill the start of `view` with the next samples; 0 at the end."""
        count = min(len(view), len(self._pcm) - self._at)
        view[:count] = self._pcm[self._at : self._at + count]
        self._at += count
        return count

    def finish(self) -> None:
        """Nothing to wait for: every sample was decoded before the first read."""

    def close(self) -> None:
        """Let the samples go; safe to call twice."""
        self._pcm = memoryview(b"")
        self._at = 0


class _Worker:
    """One decoding process and the two pipes to it."""

    def __init__(self, process: subprocess.Popen[bytes], requests: Connection,
                 answers: Connection) -> None:  # fmt: skip
        self.process = process
        self._requests = requests
        self._answers = answers

    @classmethod
    def start(cls) -> _Worker:
        """A worker that said it is ready; raises WorkerGone if it did not."""
        requests_read, requests_write = os.pipe()
        answers_read, answers_write = os.pipe()
        _widen_pipe(answers_read, size_bytes=_ANSWER_PIPE_BYTES)
        try:
            process = subprocess.Popen(
                [sys.executable, "-c", _LAUNCH, _PACKAGE_ROOT, str(requests_read),
                 str(answers_write)],
                pass_fds=(requests_read, answers_write),
                env=decoding_worker_environment(),
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
        except OSError as exc:
            os.close(requests_write)
            os.close(answers_read)
            raise WorkerGone(f"cannot start: {exc.strerror or exc}") from exc
        finally:
            os.close(requests_read)
            os.close(answers_write)
        worker = cls(process, Connection(requests_write, readable=False),
                     Connection(answers_read, writable=False))  # fmt: skip
        try:
            if worker.answer(timeout_s=_START_TIMEOUT_S) != _READY:
                raise WorkerGone("said something else than ready")
        except WorkerGone:
            worker.stop()
            raise
        return worker

    def decode(self, path: Path, *, timeout_s: float) -> tuple[AudioInfo, DecodedPcm | None,
                                                               bool] | None:  # fmt: skip
        """(info, samples, exact) of `path`, samples None when they follow in pieces
        (`answer`); None if ffmpeg should decode it."""
        try:
            self._requests.send_bytes(os.fsencode(str(path.absolute())))
        except OSError as exc:
            raise WorkerGone("its pipe is closed") from exc
        described = self.answer(timeout_s=timeout_s)
        if not described:
            return None
        fields = json.loads(described)
        streamed, exact = fields.pop("streamed", False), fields.pop("exact", True)
        if streamed:
            return AudioInfo(**fields), None, exact
        pcm = self.answer(timeout_s=timeout_s)  # written right after the description
        return AudioInfo(**fields), DecodedPcm(pcm, exact=exact), True

    def answer(self, *, timeout_s: float) -> bytes:
        """The next message (a description, samples, a streamed file's piece), read whole
        within `timeout_s`; raises WorkerGone. Connection.recv_bytes would wait
        for ever on a worker stopped halfway through writing one (blocked on a full pipe
        while the splitter waited, then hung)."""
        deadline = time.monotonic() + timeout_s
        try:
            (size,) = struct.unpack("!i", self._read(4, deadline=deadline, timeout_s=timeout_s))
            if size == -1:  # multiprocessing's framing of a message over 2 GiB
                (size,) = struct.unpack("!Q", self._read(8, deadline=deadline, timeout_s=timeout_s))
            return self._read(size, deadline=deadline, timeout_s=timeout_s)
        except OSError as exc:
            raise WorkerGone("it ended") from exc

    def _read(self, size: int, *, deadline: float, timeout_s: float) -> bytes:
        """`size` bytes of the answer pipe, or WorkerGone at `deadline` or its end."""
        parts: list[bytes] = []
        while size > 0:
            if not self._answers.poll(max(0.0, deadline - time.monotonic())):
                raise WorkerGone(f"no answer within {timeout_s:g} s")
            part = os.read(self._answers.fileno(), size)
            if not part:
                raise WorkerGone("it ended")
            parts.append(part)
            size -= len(part)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def stop(self) -> None:
        """Close its pipes (it ends at the end of file), then wait, or kill it."""
        self._requests.close()
        self._answers.close()
        try:
            self.process.wait(timeout=_STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        """End it now and reap it; its pipes closed."""
        self.process.kill()
        self.process.wait()
        self._requests.close()
        self._answers.close()


def _widen_pipe(descriptor: int, *, size_bytes: int) -> None:
    """Ask for a pipe of `size_bytes`; one the system refuses stays as it is (still works)."""
    with contextlib.suppress(OSError, AttributeError):  # over the system's cap; not Linux
        fcntl.fcntl(descriptor, fcntl.F_SETPIPE_SZ, size_bytes)


class DecoderPool:
    """Up to `max_processes` decoding workers, started when first needed, kept for the run;
    a worker streaming a long file (waiting on the splitter most of the time) is not
    counted, up to twice `max_processes` in all, so long files leave short ones a worker.

    Thread-safe: each decode thread takes a free worker for one file. `close()` ends them.
    """

    def __init__(self, *, max_processes: int) -> None:
        self._max_processes = max_processes
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._started = 0  # workers alive, idle or decoding
        self._streaming = 0  # of those, held by a streamed file
        self._unavailable = False  # a worker could not start: ffmpeg decodes everything
        self._closed = False
        self.decoded = 0  # files the workers decoded (for tests and benchmarks)

    def decode(
        self, path: Path, *, head: bytes, timeout_s: float
    ) -> tuple[AudioInfo, DecodedPcm | StreamedPcm] | None:
        """(info, samples) of a well-formed compressed file (`looks_compressed`): decoded
        whole up to 5 minutes, streamed beyond; None if ffmpeg should decode `path` instead."""
        if not looks_compressed(head) or (worker := self._take()) is None:
            return None
        try:
            decoded = worker.decode(path, timeout_s=timeout_s)
        except WorkerGone as exc:
            logger.debug("a decoding worker is gone (%s); ffmpeg decodes this file", exc)
            worker.kill()  # dead already, or hung past the caller's timeout: no grace
            self._give_back(None, decoded=False)
            return None
        if decoded is None:
            self._give_back(worker, decoded=False)
            return None
        info, whole, exact = decoded
        if whole is not None:
            self._give_back(worker, decoded=True)
            return info, whole
        with self._lock:
            self._streaming += 1
        streamed = StreamedPcm(path, answers=worker, head=head, timeout_s=timeout_s, exact=exact,
                               release=functools.partial(self._release, worker))  # fmt: skip
        return info, streamed

    def _release(self, worker: _Worker, *, alive: bool, decoded: bool) -> None:
        """A streamed file's worker back to the pool, or killed (dead, hung, or the file
        left half read)."""
        with self._lock:
            self._streaming -= 1
        if not alive:
            worker.kill()
        self._give_back(worker if alive else None, decoded=decoded)

    def _take(self) -> _Worker | None:
        with self._lock:
            if self._closed or self._unavailable:
                return None
            if self._idle:
                return self._idle.pop()
            decoding = self._started - self._streaming
            if decoding >= self._max_processes or self._started >= 2 * self._max_processes:
                return None
            self._started += 1
        try:
            return _Worker.start()
        except WorkerGone as exc:
            with self._lock:
                self._started -= 1
                self._unavailable = True
            logger.info("libav decoding is not available (%s): ffmpeg decodes every file", exc)
            return None

    def _give_back(self, worker: _Worker | None, *, decoded: bool) -> None:
        with self._lock:
            self.decoded += decoded
            needed = self._started <= self._max_processes + self._streaming  # not a spare
            if worker is not None and not self._closed and needed:
                self._idle.append(worker)
                return
            self._started -= 1
        if worker is not None:
            worker.stop()

    def close(self) -> None:
        """End the idle workers now and each busy one when its file is done."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            self._started -= len(idle)
        for worker in idle:
            worker.stop()
