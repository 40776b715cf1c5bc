"""A long recording's samples as a libav worker streams them (tasks/libav/worker.py), with
ffmpeg taking over from the file's start when the worker cannot finish it.

A file longer than the worker decodes whole comes back in pieces of about 512 KB, read
when the splitter asks for samples: medasr holds one piece, the answer pipe at most 1 MB,
the worker the piece it fills, whatever the recording's length. The worker's verdict
comes only at the end, after the splitter has cut (and the pipeline sent) the chunks of
what came before. So when the worker dies, hangs past the caller's timeout or finds the
file unfit (a damaged packet, fewer samples than promised), ffmpeg decodes the file from
its start (tasks/audio/decoder.py) and its first samples, as many as the splitter already
took, are read and dropped: the same decoders and resampler made them, so they are the
same bytes (a CRC of what was taken is compared, and a difference is logged), and the
splitter goes on with ffmpeg's next sample as if ffmpeg had decoded the whole file. Its
errors are ffmpeg's own, worded as for any file ffmpeg decodes; an error ffmpeg would have
raised before the first sample (the file changed in between) comes after the chunks
already cut.
"""

from __future__ import annotations

import logging
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Protocol

from tasks.audio.decoder import PcmDecoder
from tasks.errors import CorruptAudio

logger = logging.getLogger(__name__)

END = b""  # tasks/libav/worker.py's framing, without importing it
FIT = b"ok"
_PROBE_TIMEOUT_S = 60.0
_SKIP_BYTES = 256 * 1024  # ffmpeg's first samples are read and dropped this much at a time


class WorkerGone(Exception):
    """The worker died, closed its pipe or did not answer in time."""


class Answers(Protocol):
    """The worker's answer pipe."""

    def answer(self, *, timeout_s: float) -> bytes:
        """The next message; raises WorkerGone."""
        ...


# Called once when the worker is done with the file: alive (False: kill it) and whether
# it decoded the file to its end.
Release = Callable[..., None]


class StreamedPcm:
    """16 kHz mono s16le samples of a long file, read like ffmpeg's pipe (`readinto`,
    `finish`, `close`). `timeout_s` bounds the time spent waiting for the worker (and
    again for ffmpeg if it takes over), not the time the caller spends between reads."""

    def __init__(self, path: Path, *, answers: Answers, release: Release, head: bytes,
                 timeout_s: float, exact: bool) -> None:  # fmt: skip
        self.path = path
        self.exact = exact  # whether ffmpeg would read the duration rather than estimate it
        self._answers = answers
        self._release: Release | None = release
        self._head = head
        self._timeout_s = timeout_s
        self._budget_s = timeout_s
        self._piece = memoryview(b"")
        self._at = 0
        self._taken_bytes = 0  # handed to the splitter
        self._taken_crc = 0
        self._ended = False  # the worker decoded the file to its end
        self._ffmpeg: PcmDecoder | None = None
        self._truncated: str | None = None  # ffmpeg's probe found the file cut short

    def __enter__(self) -> StreamedPcm:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def taken_over(self) -> bool:
        """Whether ffmpeg decodes the rest."""
        return self._ffmpeg is not None

    def readinto(self, view: memoryview) -> int:
        """Fill the start of `view` with the next samples; 0 at the end."""
        while self._ffmpeg is None and self._at == len(self._piece) and not self._ended:
            self._next_piece()
        if self._ffmpeg is not None:
            return self._ffmpeg.readinto(view)
        count = min(len(view), len(self._piece) - self._at)
        taken = self._piece[self._at : self._at + count]
        view[:count] = taken
        self._taken_crc = zlib.crc32(taken, self._taken_crc)
        self._at += count
        self._taken_bytes += count
        return count

    def finish(self) -> None:
        """After the last read: nothing if the worker decoded the file; else ffmpeg's exit,
        raising the error its stderr names (or its probe's, for a file cut short)."""
        if self._ffmpeg is None:
            return
        try:
            self._ffmpeg.finish()
        except CorruptAudio as exc:
            if self._truncated is None:
                raise
            raise CorruptAudio(self._truncated, path=str(self.path)) from exc
        if self._truncated is not None:  # as iter_chunks raises a probe's truncation
            raise CorruptAudio(self._truncated, path=str(self.path))

    def close(self) -> None:
        """Kill a worker still streaming, stop ffmpeg; safe to call twice."""
        self._give_back(alive=False, decoded=False)
        if self._ffmpeg is not None:
            self._ffmpeg.close()
        self._piece = memoryview(b"")
        self._at = 0

    def _next_piece(self) -> None:
        """The worker's next piece; at its end the verdict; on any failure ffmpeg."""
        try:
            message = self._receive()
            if message != END:
                self._piece, self._at = memoryview(message), 0
                return
            verdict = self._receive()
        except WorkerGone as exc:
            logger.debug("a decoding worker is gone mid-file (%s); ffmpeg decodes it", exc)
            self._give_back(alive=False, decoded=False)
            self._take_over()
            return
        self._piece, self._at = memoryview(b""), 0
        self._ended = verdict == FIT
        self._give_back(alive=True, decoded=self._ended)
        if not self._ended:
            self._take_over()

    def _receive(self) -> bytes:
        started = time.monotonic()
        try:
            return self._answers.answer(timeout_s=max(0.0, self._budget_s))
        finally:
            self._budget_s -= time.monotonic() - started

    def _give_back(self, *, alive: bool, decoded: bool) -> None:
        release, self._release = self._release, None
        if release is not None:
            release(alive=alive, decoded=decoded)

    def _take_over(self) -> None:
        """ffmpeg from the file's start, its first samples (those taken) dropped."""
        decoder = PcmDecoder(self.path, timeout_s=self._timeout_s)
        try:
            info, _ = decoder.read_info(
                head=self._head, timeout_s=min(self._timeout_s, _PROBE_TIMEOUT_S)
            )
            self._truncated = info.truncated
            self._skip_taken(decoder)
        except BaseException:
            decoder.close()
            raise
        self._ffmpeg = decoder

    def _skip_taken(self, decoder: PcmDecoder) -> None:
        """Read and drop ffmpeg's first samples, as many bytes as the splitter took."""
        scratch = memoryview(bytearray(min(_SKIP_BYTES, max(1, self._taken_bytes))))
        left, crc = self._taken_bytes, 0
        while left > 0:
            count = decoder.readinto(scratch[: min(left, len(scratch))])
            if count == 0:
                break
            crc = zlib.crc32(scratch[:count], crc)
            left -= count
        if left or crc != self._taken_crc:
            logger.warning(
                "a decoding worker's samples differ from ffmpeg's in their first %d bytes; "
                "ffmpeg decodes the rest of the file",
                self._taken_bytes,
            )
