"""One ffmpeg process per compressed file: it describes the input, then streams the decode.

`ffmpeg -i PATH` (the probe) and the decode print the same description of the input
on stderr, and the decode prints all of it before its first sample ("Stream mapping:"
ends it). Reading that description from the decode's own stderr saves a second process
start (the bundled static ffmpeg's start-up is much of the cost of a short
dictation) while every error found from the description is still raised before the
first sample, worded as the probe would word it (`parse_probe`).

At `-loglevel level+info` each stderr line carries its level, so the errors kept for
the summary of a failed decode are exactly what `-loglevel error` would print.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import select
import selectors
import subprocess
import time
from pathlib import Path
from types import TracebackType

from tasks.audio import ffmpeg
from tasks.audio.ffmpeg import (
    OUTPUT_SAMPLE_RATE_HZ,
    AudioInfo,
    input_arg,
    parse_probe,
    summarize_stderr,
)
from tasks.errors import AudioError, CorruptAudio, DecodeFailed, NotAudio, UnsupportedAudio

_PIPE_BYTES = 1 << 20  # a bigger pipe means fewer wake-ups per second of audio
_F_SETPIPE_SZ = 1031
_ERRORS_KEEP_BYTES = 16 * 1024  # ffmpeg's error lines, for the one-line summary
_HEADER_KEEP_BYTES = 64 * 1024  # its description of the input, for parse_probe
_LINE_KEEP_BYTES = 1024
# "[mp3 @ 0x5] [error] msg" at `-loglevel level+info`: group 1 the component, 2 the level.
_LEVEL_TAG = re.compile(
    rb"^((?:\[[^\]]*\] )*?)\[(trace|debug|verbose|info|warning|error|fatal|panic)\] "
)
_PROBE_LINE = re.compile(rb"Input #|Duration:|Stream #|Estimating duration|unknown codec")


class FfmpegLog:
    """ffmpeg's stderr at `-loglevel level+info`, kept as two bounded texts.

    `header`: every line up to the end of the input description ("Stream mapping:",
    printed before any sample), what `ffmpeg -i PATH` would print. `errors`: the lines
    at level error and above from the whole run, what `-loglevel error` would print.
    """

    def __init__(self) -> None:
        self.header = bytearray()
        self.errors = bytearray()
        self.header_done = False
        self._partial = b""
        self._level = b"info"

    def feed(self, data: bytes) -> None:
        """Take the next bytes ffmpeg wrote to stderr."""
        lines = re.split(rb"[\r\n]", self._partial + data)
        self._partial = lines.pop()[:_LINE_KEEP_BYTES]
        for line in lines:
            self._add(line)

    def close(self) -> None:
        """At the end of stderr: take a last unterminated line; the header is complete."""
        if self._partial:
            self._add(self._partial)
            self._partial = b""
        self.header_done = True

    def _add(self, raw: bytes) -> None:
        """File one line under its level (a line without a tag continues the last one)."""
        line = raw[:_LINE_KEEP_BYTES]
        if tagged := _LEVEL_TAG.match(line):
            self._level = tagged.group(2)
            line = tagged.group(1) + line[tagged.end() :]
        if not line:
            return
        if self._level in (b"error", b"fatal", b"panic") and len(self.errors) < _ERRORS_KEEP_BYTES:
            self.errors += line + b"\n"
        if self.header_done:
            return
        if line.startswith((b"Stream mapping:", b"Output #0")):
            self.header_done = True
        elif len(self.header) < _HEADER_KEEP_BYTES or (
            len(self.header) < 2 * _HEADER_KEEP_BYTES and _PROBE_LINE.search(line)
        ):
            # Past the budget (long tags, many chapters) only what parse_probe reads is kept.
            self.header += line + b"\n"


class PcmDecoder:
    """One ffmpeg decoding a file to 16 kHz mono s16le on a pipe; use as a context manager.

    The same process describes its input on stderr before the first sample, so no
    separate probe run is needed: call `read_info` before reading. `timeout_s` bounds the
    time spent waiting for ffmpeg, not the time the caller spends between reads. Leaving
    the context kills a still-running ffmpeg and reaps it.
    """

    def __init__(self, path: Path, *, timeout_s: float) -> None:
        self.path = path
        self._budget_s = timeout_s
        self._timeout_s = timeout_s
        self._log = FfmpegLog()
        self._pending = b""  # samples that came while the header was read
        self._stdout_open = True
        command = [
            ffmpeg.find_ffmpeg(), "-nostdin", "-hide_banner", "-nostats", "-loglevel", "level+info",
            "-threads", "1", "-i", input_arg(path), "-map", "0:a:0", "-vn", "-sn", "-dn",
            "-ac", "1", "-ar", str(OUTPUT_SAMPLE_RATE_HZ), "-c:a", "pcm_s16le", "-f", "s16le",
            "-flush_packets", "0",
            "pipe:1",
        ]  # fmt: skip
        try:
            self._proc = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
            )
        except OSError as exc:
            raise DecodeFailed(
                f"cannot run ffmpeg to decode {path}: {exc}", path=str(path)
            ) from exc
        try:
            self._watch_pipes()
        except BaseException:  # out of file descriptors, say: never leave ffmpeg running
            self._proc.kill()
            self._proc.wait()
            for pipe in (self._proc.stdout, self._proc.stderr):  # nor its pipes open
                if pipe is not None:
                    pipe.close()
            raise

    def _watch_pipes(self) -> None:
        """Register ffmpeg's stdout and stderr with a selector (a bigger stdout pipe first)."""
        stdout, stderr = self._proc.stdout, self._proc.stderr
        if stdout is None or stderr is None:  # impossible with PIPE; keeps mypy honest
            raise DecodeFailed(f"ffmpeg gave no pipes for {self.path}", path=str(self.path))
        self._stdout_fd = stdout.fileno()
        self._stderr_fd = stderr.fileno()
        with contextlib.suppress(OSError):  # a bigger pipe is an optimization, not a need
            fcntl.fcntl(self._stdout_fd, _F_SETPIPE_SZ, _PIPE_BYTES)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._stdout_fd, selectors.EVENT_READ)
        self._selector.register(self._stderr_fd, selectors.EVENT_READ)

    def __enter__(self) -> PcmDecoder:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Kill ffmpeg if it still runs, reap it, close the pipes; safe to call twice."""
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait()
        self._selector.close()
        for pipe in (self._proc.stdout, self._proc.stderr):
            if pipe is not None:
                pipe.close()

    def read_info(self, *, head: bytes, timeout_s: float) -> tuple[AudioInfo, bool]:
        """What probe_with_confidence returns, from this run's stderr; kills ffmpeg and
        raises the same AudioError as the probe would, or DecodeFailed after `timeout_s`."""
        try:
            self._read_header(timeout_s=timeout_s)
            header = self._log.header.decode("utf-8", errors="replace")
            info = parse_probe(header, path=self.path, head=head, keep_truncated=True)
        except BaseException:
            self.close()
            raise
        return info, "Estimating duration" not in header

    def _read_header(self, *, timeout_s: float) -> None:
        """Read stderr until the input is described (or ffmpeg ended); DecodeFailed on time."""
        deadline = time.monotonic() + timeout_s
        while not self._log.header_done:
            remaining_s = deadline - time.monotonic()
            ready = {int(key.fd) for key, _ in self._selector.select(max(0.0, remaining_s))}
            if not ready and remaining_s <= 0:
                raise DecodeFailed(
                    f"ffmpeg did not finish probing {self.path} within {timeout_s:g} s",
                    path=str(self.path),
                )
            # One read per wake-up: a second event of the same round may be stale.
            if self._stderr_fd in ready:
                self._drain_stderr()
            elif self._stdout_fd in ready and self._stdout_open:
                self._read_early_samples()

    def _read_early_samples(self) -> None:
        """Samples before the header's end marker (another ffmpeg version): keep them; the
        description, written to stderr before them, is already in the pipe."""
        self._pending = os.read(self._stdout_fd, _PIPE_BYTES)
        if not self._pending:  # ffmpeg is ending: its stderr closes next
            self._stdout_open = False
            self._selector.unregister(self._stdout_fd)
            return
        while self._stderr_fd in self._selector.get_map() and self._stderr_has_data():
            self._drain_stderr()
        self._log.header_done = True

    def _stderr_has_data(self) -> bool:
        """True when a read of stderr would not block."""
        return bool(select.select([self._stderr_fd], [], [], 0)[0])

    def _wait_ready(self) -> list[int]:
        """File descriptors ready to read; raises DecodeFailed when the budget is spent."""
        started = time.monotonic()
        events = self._selector.select(timeout=max(0.0, self._budget_s))
        self._budget_s -= time.monotonic() - started
        if not events and self._budget_s <= 0:
            self.close()
            raise DecodeFailed(
                f"ffmpeg did not finish decoding {self.path} within {self._timeout_s:g} s",
                path=str(self.path),
            )
        return [int(key.fd) for key, _ in events]

    def _drain_stderr(self) -> None:
        """Read what ffmpeg wrote to stderr into the log."""
        data = os.read(self._stderr_fd, 65536)
        if data:
            self._log.feed(data)
        else:
            self._selector.unregister(self._stderr_fd)
            self._log.close()

    def readinto(self, view: memoryview) -> int:
        """Fill the start of `view` with PCM bytes; 0 at the end of the stream."""
        if self._pending:
            count = min(len(view), len(self._pending))
            view[:count] = self._pending[:count]
            self._pending = self._pending[count:]
            return count
        while self._stdout_open:
            for fd in self._wait_ready():
                if fd == self._stderr_fd:
                    self._drain_stderr()
                    continue
                count = os.readv(self._stdout_fd, [view])
                if count:
                    return count
                self._stdout_open = False
                self._selector.unregister(self._stdout_fd)
        return 0

    def finish(self) -> None:
        """After the last read: wait for ffmpeg's exit; raises the error its stderr names."""
        while self._selector.get_map():
            if self._stderr_fd in self._wait_ready():
                self._drain_stderr()
        self._proc.wait()
        if self._proc.returncode != 0:
            raise self._exit_failure(self._proc.returncode)

    def _exit_failure(self, returncode: int) -> AudioError:
        """The error for ffmpeg exiting non-zero during the decode."""
        stderr = self._log.errors.decode("utf-8", errors="replace")
        summary = summarize_stderr(stderr)
        where = str(self.path)
        if "matches no streams" in stderr:
            return NotAudio(
                f"not an audio file: {self.path} (ffmpeg found no audio stream)", path=where
            )
        if re.search(r"no decoder found|Decoder .* not found|unknown codec", stderr, re.I):
            return UnsupportedAudio(
                f"unsupported audio codec in {self.path} ({summary})", path=where
            )
        if re.search(
            r"Invalid data|partial file|corrupt|truncat|error while decoding", stderr, re.I
        ):
            return CorruptAudio(
                f"damaged or truncated audio file: {self.path} ({summary})", path=where
            )
        return DecodeFailed(
            f"ffmpeg failed to decode {self.path} (exit {returncode}: {summary})", path=where
        )
